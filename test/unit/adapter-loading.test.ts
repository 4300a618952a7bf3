import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadApiAdapter, loadCliAdapter, loadRegisteredAdapters } from '../../src/adapters/registry.js';
import { CalError } from '../../src/errors.js';
import { dirIdentity } from '../../src/engine/stability.js';
import { AgentSessionHandle, HANDLE_SCHEMA_VERSION, type ProviderName, type Transport } from '../../src/handles/schema.js';
import { StateStore } from '../../src/state/store.js';
import { calBin, repoRoot } from '../support/clis.js';
import { loadedFiles, writeLoadRecorder } from '../support/load-recorder.js';

/**
 * The adapter registry loads an adapter on first use: a continue of one CLI's session builds that
 * adapter's modules and no other's (cal's own start-up time, issue 17). What a run loads is
 * recorded by a module-loader hook in the built `cal`, as in commands-layering.test.ts, run
 * unbundled (tsc's dist/cli.js: the bundle's chunks do not say which module is which, and it
 * keeps the registry's dynamic imports as its chunk boundaries). The
 * handles pin a CLI that is not on disk, so each continue goes through the turn's whole path up to
 * the engine's pin check and stops there (cli_missing) without starting anything.
 */
const run = promisify(execFile);
const adapterFolders = ['claude-code', 'codex', 'gemini', 'pi', 'cursor', 'agy', 'qwen', 'copilot', 'opencode', 'cline', 'kilo', 'acp', 'api'];

describe('the adapter registry', () => {
  it('loads each adapter once and keeps the usage error for a provider without a CLI adapter', async () => {
    const codex = await loadCliAdapter('codex');
    expect(codex.name).toBe('codex');
    expect(await loadCliAdapter('codex')).toBe(codex);
    expect((await loadRegisteredAdapters()).map((a) => a.name)).toEqual(['claude-code', 'codex', 'gemini', 'pi', 'cursor', 'agy', 'qwen', 'copilot', 'opencode', 'cline', 'kilo', 'acp']);
    const refused = await loadCliAdapter('anthropic').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(CalError);
    expect(refused).toMatchObject({ kind: 'usage', message: 'provider anthropic has no adapter in this version of cal; available: claude-code, codex, gemini, pi, cursor, agy, qwen, copilot, opencode, cline, kilo, acp' });
    expect((await loadApiAdapter('openai'))?.name).toBe('openai');
    expect(await loadApiAdapter('codex')).toBeNull();
  });
});

describe('what a continue of one provider loads of the adapters', () => {
  let dir: string;
  let state: string;
  let work: string;
  let unbundledBin: string;
  let recorder: string[];

  beforeAll(async () => {
    if (!existsSync(path.join(repoRoot, 'dist', 'cli.js'))) throw new Error('dist/cli.js is missing: run npm run build first');
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-adapter-loads-'));
    state = path.join(dir, 'state');
    work = path.join(dir, 'work');
    await fs.mkdir(work);
    ({ nodeArgs: recorder, unbundledBin } = await writeLoadRecorder(dir));
  });

  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** A handle of `provider` whose pinned CLI is gone, with a session to resume. */
  async function savedHandle(id: string, provider: ProviderName, transport: Transport): Promise<void> {
    const workingDir = dirIdentity(work);
    const now = new Date().toISOString();
    const store = await StateStore.open(state);
    await store.saveHandle(
      AgentSessionHandle.parse({
        schemaVersion: HANDLE_SCHEMA_VERSION,
        id,
        name: null,
        scope: 'chat',
        ownerId: null,
        correlationId: null,
        config: { workingDir, model: null, systemPromptHash: null, mcpConfigHash: null, toolPolicy: 'default' },
        provider: {
          provider,
          transport,
          nativeSessionId: '0b5c2a1e-7d3f-4e2a-9c1b-123456789abc',
          tmux: null,
          workingDir,
          model: null,
          status: 'idle',
          cli: { path: path.join(dir, 'gone', provider), realPath: path.join(dir, 'gone', provider), version: '1.0.0' },
          transcript: { path: path.join(dir, `${id}.jsonl`), offset: 0 },
        },
        panes: [],
        createdAt: now,
        updatedAt: now,
      }),
    );
  }

  /** A run of the built cal: the files it loaded and its stderr. */
  async function calRun(bin: string, args: string[]): Promise<{ loaded: string[]; stderr: string }> {
    const res = await run(process.execPath, [...recorder, bin, '--state-dir', state, ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NO_COLOR: '1' },
      cwd: work,
    }).catch((err: { stderr: string }) => ({ stderr: err.stderr }));
    const { files, rest } = loadedFiles(res.stderr);
    return { loaded: files, stderr: rest };
  }

  /** The adapter folders (under dist/adapters/) an unbundled run of cal loaded modules from, and its stderr. */
  async function adaptersLoaded(args: string[]): Promise<{ folders: string[]; stderr: string }> {
    const { loaded, stderr } = await calRun(unbundledBin, args);
    const adapters = path.join(repoRoot, 'dist', 'adapters') + path.sep;
    const modules = loaded.filter((u) => u.startsWith(adapters)).map((u) => u.slice(adapters.length));
    const folders = [...new Set(modules.filter((m) => m.includes('/')).map((m) => m.split('/')[0] as string))].sort();
    return { folders, stderr };
  }

  it('a structured continue of a Codex session loads the Codex adapter and no other', async () => {
    await savedHandle('codexhandle1', 'codex', 'structured');
    const { folders, stderr } = await adaptersLoaded(['continue', 'codexhandle1', 'hello']);
    // It got as far as the engine's check of the pinned CLI, so the turn's whole path ran.
    expect(stderr).toMatch(/codex 1\.0\.0 pinned by this handle is gone/);
    expect(folders).toEqual(['codex']);
  });

  it('a tmux continue of a Claude Code session loads the Claude Code adapter and no other', async () => {
    await savedHandle('claudehandle', 'claude-code', 'tmux');
    const { folders, stderr } = await adaptersLoaded(['continue', 'claudehandle', 'hello']);
    expect(stderr).toMatch(/claude 1\.0\.0 pinned by this handle is gone/);
    expect(folders).toEqual(['claude-code']);
  });

  it('a start of an API session loads no CLI adapter', async () => {
    const { folders, stderr } = await adaptersLoaded(['start', '--provider', 'anthropic', 'hello']);
    expect(stderr).toMatch(/needs ANTHROPIC_API_KEY/);
    expect(folders).toEqual(['api']);
  });

  it("the bundled cal keeps each adapter in a chunk of its own, and a continue of Codex loads only Codex's", async () => {
    // The bundle names a chunk after the module it starts from: the adapter's folder (or API file).
    const adapterChunk = /^(claude-code|codex|gemini|pi|cursor|agy|qwen|opencode|cline|kilo|anthropic|openai)-[A-Za-z0-9_-]{8}\.c?js$/;
    const chunks = (await fs.readdir(path.join(repoRoot, 'dist', 'bin'))).flatMap((f) => adapterChunk.exec(f)?.[1] ?? []);
    expect(chunks.sort()).toEqual(['agy', 'anthropic', 'claude-code', 'cline', 'codex', 'cursor', 'gemini', 'kilo', 'openai', 'opencode', 'pi', 'qwen']);
    await savedHandle('codexhandle2', 'codex', 'structured');
    const { loaded, stderr } = await calRun(calBin, ['continue', 'codexhandle2', 'hello']);
    expect(stderr).toMatch(/codex 1\.0\.0 pinned by this handle is gone/);
    expect(loaded.flatMap((u) => adapterChunk.exec(path.basename(u))?.[1] ?? [])).toEqual(['codex']);
    // zod 4 (the ACP SDK's, 97 KB) stays in the chunk of what loads the SDK: in the shared chunk it
    // cost every command about 3 ms of its start. Its schema classes name themselves `$Zod…`.
    const zod4 = async (file: string) => (await fs.readFile(file, 'utf8')).includes('$ZodType');
    const chunkFiles = (await fs.readdir(path.join(repoRoot, 'dist', 'bin'))).map((f) => path.join(repoRoot, 'dist', 'bin', f));
    expect((await Promise.all(chunkFiles.map(zod4))).some(Boolean)).toBe(true);
    const bundled = loaded.filter((u) => u.startsWith(path.join(repoRoot, 'dist', 'bin') + path.sep));
    expect(bundled.length).toBeGreaterThan(2);
    expect((await Promise.all(bundled.map(async (f) => ((await zod4(f)) ? path.basename(f) : null)))).filter(Boolean)).toEqual([]);
  });

  it('every adapter folder is one the registry knows (so the checks above see them all)', async () => {
    const built = (await fs.readdir(path.join(repoRoot, 'dist', 'adapters'), { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(built.sort()).toEqual([...adapterFolders].sort());
  });
});
