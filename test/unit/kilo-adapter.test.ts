import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { kiloVersion, nativeKiloBinary } from '../../src/adapters/kilo/binary.js';
import { KILO } from '../../src/adapters/kilo/flavour.js';
import { kiloAdapter } from '../../src/adapters/kilo/index.js';
import { OPENCODE } from '../../src/adapters/opencode/flavour.js';
import { sessionFlags } from '../../src/adapters/opencode/launch.js';
import { syncMirror } from '../../src/adapters/opencode/store.js';
import { OpencodeTurnObserver } from '../../src/adapters/opencode/turn.js';
import type { LaunchRequest } from '../../src/adapters/types.js';
import { scratchDir } from '../support/cal.js';
import { repoRoot } from '../support/clis.js';
import { fixtureRecords } from '../support/fixtures.js';

/**
 * Kilo Code CLI (7.7.7, docs/kilo.md) runs on the OpenCode adapter's parts under its own names and
 * paths: these check the names, the binary cal pins behind the npm wrapper, and what Kilo writes
 * into its store that OpenCode does not (the transient snapshot progress part).
 */
const scratch: string[] = [];
afterAll(async () => {
  for (const dir of scratch) await fs.rm(dir, { recursive: true, force: true });
});

function request(env: Record<string, string> = {}): LaunchRequest {
  return {
    mode: 'fresh',
    cli: { path: '/bin/kilo', realPath: '/bin/kilo', version: '7.7.7' },
    config: { cwd: '/w', model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'accept-edits' },
    env,
    message: 'hi',
    sessionDir: null,
  } as unknown as LaunchRequest;
}

describe("Kilo Code CLI's names and paths", () => {
  it("puts the session's settings in KILO_CONFIG_CONTENT, never OPENCODE_*, and quiets every launch", () => {
    const flags = sessionFlags(KILO, request({ KILO_CONFIG_CONTENT: '{"theme":"dark"}' }));
    expect(JSON.parse(flags.env.KILO_CONFIG_CONTENT!)).toEqual({ theme: 'dark', permission: { edit: 'allow', bash: 'ask' } });
    expect(flags.env).toMatchObject({ KILO_DISABLE_AUTOUPDATE: '1', KILO_DISABLE_MODELS_FETCH: '1', KILO_TELEMETRY_LEVEL: 'off' });
    expect(Object.keys(flags.env).filter((k) => k.startsWith('OPENCODE_'))).toEqual([]);
    expect(kiloAdapter.envNames).toEqual(['HOME', 'XDG_DATA_HOME', 'XDG_CONFIG_HOME', 'KILO_CONFIG', 'KILO_CONFIG_CONTENT', 'KILO_DB']);
  });

  it("writes the scripted model's config as kilo.json in a kilo home, named by KILO_CONFIG", async () => {
    const dir = await scratchDir('kilo-home');
    scratch.push(dir);
    const env = await kiloAdapter.scriptedModelEnv(dir, 'http://127.0.0.1:4100', { PATH: '/bin' });
    expect(env.KILO_CONFIG).toBe(path.join(dir, 'kilo-home', '.config', 'kilo', 'kilo.json'));
    expect(JSON.parse(readFileSync(env.KILO_CONFIG!, 'utf8'))).toMatchObject({ model: 'scripted/scripted-model', provider: { scripted: { options: { baseURL: 'http://127.0.0.1:4100/v1' } } } });
    expect(existsSync(path.join(env.XDG_DATA_HOME!, 'kilo'))).toBe(true);
  });

  it("pins the native binary behind the npm wrapper, its version read from the package", async () => {
    const wrapper = path.join(repoRoot, 'node_modules', '@kilocode', 'cli', 'bin', 'kilo');
    const native = nativeKiloBinary({ path: wrapper, realPath: wrapper });
    expect(native).toBe(path.join(path.dirname(wrapper), '.kilo'));
    expect(await kiloVersion(native, { PATH: '/bin' })).toBe('7.7.7');
  });

  it("refuses an OpenCode mirror as Kilo's and a Kilo mirror as OpenCode's", async () => {
    const dir = await scratchDir('kilo-mirror');
    scratch.push(dir);
    const cli = { path: '/bin/kilo', realPath: '/bin/kilo', version: '7.7.7' };
    const file = path.join(dir, 'ses_x.jsonl');
    await fs.writeFile(file, JSON.stringify({ kind: 'kilo-mirror', sessionId: 'ses_x', executable: '/bin/kilo', env: { HOME: '/h' }, mcpServers: [] }) + '\n');
    await expect(syncMirror(OPENCODE, file, cli)).rejects.toMatchObject({ kind: 'resume_unavailable' });
    const other = path.join(dir, 'ses_y.jsonl');
    await fs.writeFile(other, JSON.stringify({ kind: 'opencode-mirror', sessionId: 'ses_y', executable: '/bin/kilo', env: { HOME: '/h' }, mcpServers: [] }) + '\n');
    await expect(syncMirror(KILO, other, cli)).rejects.toMatchObject({ kind: 'resume_unavailable' });
  });
});

describe("Kilo's input box", () => {
  it('reads its placeholder (grey 247) as an empty box, typed text (white) as a draft', () => {
    const { screens } = JSON.parse(readFileSync(path.join(repoRoot, 'fixtures', 'screens', 'kilo-7.7.7-input-box.json'), 'utf8')) as { screens: Record<string, string[]> };
    const draft = screens['short-draft']!;
    const row = draft.findIndex((l) => l.includes('my half typed draft'));
    // The placeholder as Kilo 7.7.7 draws it on its home screen: `┃` and the text in grey 247.
    const placeholder = [...draft];
    placeholder[row] = draft[row]!.replace(/my half typed draft/, '\u001b[38;5;247mAsk anything... "Fix broken tests"\u001b[38;5;15m');
    const read = (lines: string[]) => kiloAdapter.draft!.read({ lines, cursor: { x: 0, y: 0, visible: false } });
    expect(read(draft)).toBe('my half typed draft');
    expect(read(placeholder)).toBe('');
  });
});

describe("Kilo's transient snapshot progress part", () => {
  it('is not part of the answer (a synthetic text part the mirror keeps after Kilo removed it)', () => {
    // OpenCode's recorded session, with the part Kilo 7.7.7 writes into a reply while its
    // snapshot starts slowly (`PX.progressPart` in its bundle): synthetic, marked transient.
    const session = fixtureRecords('opencode', 'tmux-session');
    const reply = session.find((r) => r.kind === 'message' && JSON.parse(r.data).role === 'assistant');
    const progress = { kind: 'part', id: 'prt_progress', messageId: reply.id, created: reply.created, updated: reply.created, data: JSON.stringify({ type: 'text', text: '⠙ Initializing snapshot…', synthetic: true, metadata: { kilo: 'transient' } }) };
    const obs = new OpencodeTurnObserver('Remember the codeword KIWI.');
    for (const r of [...session.slice(0, session.indexOf(reply)), progress, ...session.slice(session.indexOf(reply))]) obs.feed(r);
    expect(obs.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'OK, I will remember the codeword KIWI.' });
  });
});
