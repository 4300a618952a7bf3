import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agyArgv, agyToolPolicies } from '../../src/adapters/agy/turn.js';
import { claudeToolPolicies, launchEnv, sessionFlags as claudeFlags } from '../../src/adapters/claude-code/launch.js';
import { codexToolPolicies, commonOverrides } from '../../src/adapters/codex/config.js';
import { cursorArgv, cursorToolPolicies } from '../../src/adapters/cursor/turn.js';
import { piToolPolicies, sessionFlags as piFlags } from '../../src/adapters/pi/launch.js';
import { loadRegisteredAdapters } from '../../src/adapters/registry.js';
import type { LaunchRequest, SessionConfig } from '../../src/adapters/types.js';
import { checkStability, dirIdentity } from '../../src/engine/stability.js';
import { toolPolicies } from '../../src/handles/schema.js';
import { AgentSessions } from '../../src/sessions/agent-sessions.js';
import { StateStore } from '../../src/state/store.js';
import { scratchDir } from '../support/cal.js';
import { kindOf } from '../support/errors.js';
import { FakeCli, FakeTmux, fakeAdapter } from '../support/fake-engine.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Issue 20, item 7: `--tool-policy` (default | read-only | accept-edits | bypass), recorded in the
 * handle, part of the stability check, and mapped by each adapter's launch code to its CLI's own
 * flags (as the pinned binaries' --help spell them), refused where a CLI has none.
 */
const cfg = (toolPolicy: string, extra: Partial<SessionConfig> = {}): SessionConfig => ({ cwd: '/w', model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy, ...extra });
const piArgv = (config: SessionConfig) => piFlags({ config, env: {} } as unknown as LaunchRequest).argv;

describe('each adapter maps the tool policies to its CLI', () => {
  it('Claude Code: --permission-mode plan | acceptEdits | bypassPermissions (IS_SANDBOX for bypass), nothing for default', () => {
    expect(claudeToolPolicies).toEqual(['default', 'read-only', 'accept-edits', 'bypass']);
    expect(claudeFlags(cfg('default'))).toEqual([]);
    expect(claudeFlags(cfg('read-only'))).toEqual(['--permission-mode', 'plan']);
    expect(claudeFlags(cfg('accept-edits'))).toEqual(['--permission-mode', 'acceptEdits']);
    expect(claudeFlags(cfg('bypass'))).toEqual(['--permission-mode', 'bypassPermissions']);
    expect(launchEnv({}, cfg('bypass')).IS_SANDBOX).toBe('1');
    expect(launchEnv({}, cfg('accept-edits')).IS_SANDBOX).toBeUndefined();
    expect(() => claudeFlags(cfg('bypassPermissions'))).toThrow(/no Claude Code permission mode/);
  });

  it('Codex: sandbox and approval as -c overrides (exec resume has no --sandbox), bypass as its own flag', () => {
    expect(codexToolPolicies).toEqual(['default', 'read-only', 'accept-edits', 'bypass']);
    const sets = (policy: string) => commonOverrides(cfg(policy)).filter((a, i, all) => all[i - 1] === '-c' && /^(sandbox_mode|approval_policy)=/.test(a));
    expect(sets('default')).toEqual([]);
    expect(sets('read-only')).toEqual(['sandbox_mode="read-only"', 'approval_policy="never"']);
    expect(sets('accept-edits')).toEqual(['sandbox_mode="workspace-write"', 'approval_policy="never"']);
    expect(sets('bypass')).toEqual([]);
    expect(commonOverrides(cfg('bypass'))).toContain('--dangerously-bypass-approvals-and-sandbox');
    expect(commonOverrides(cfg('read-only'))).not.toContain('--dangerously-bypass-approvals-and-sandbox');
  });

  it("Pi: read-only is its --tools allowlist of reading tools; accept-edits has no equivalent; read-only with MCP refused", () => {
    expect(piToolPolicies).toEqual(['default', 'read-only', 'bypass']);
    expect(piArgv(cfg('default'))).toEqual([]);
    expect(piArgv(cfg('bypass'))).toEqual([]);
    expect(piArgv(cfg('read-only'))).toEqual(['--tools', 'read,grep,find,ls']);
    expect(() => piArgv(cfg('accept-edits'))).toThrow(/no Pi equivalent/);
    expect(() => piArgv(cfg('read-only', { mcpConfigPath: '/m.json' }))).toThrow(/MCP tools too/);
  });

  it('Cursor: --mode ask | --force; Agy: --dangerously-skip-permissions only', () => {
    expect(cursorToolPolicies).toEqual(['default', 'read-only', 'bypass']);
    expect(cursorArgv('/c', cfg('read-only'), 'id', 'm', null)).toContain('ask');
    expect(agyToolPolicies).toEqual(['default', 'bypass']);
    const features = { printFlag: '-p', addDir: true, printTimeout: true, model: true, skipPermissions: true };
    expect(() => agyArgv('/a', features, cfg('read-only'), null, 'm', 1000)).toThrow(/no agy equivalent/);
    expect(() => agyArgv('/a', { ...features, skipPermissions: false }, cfg('bypass'), null, 'm', 1000)).toThrow(/no agy equivalent/);
  });

  it('every registered adapter declares only known policies, default among them', async () => {
    for (const adapter of await loadRegisteredAdapters()) {
      expect(adapter.toolPolicies, adapter.name).toContain('default');
      for (const p of adapter.toolPolicies ?? []) expect(toolPolicies).toContain(p);
    }
  });
});

describe('the tool policy in the handle and the stability check', () => {
  let root: string;
  let store: StateStore;
  let sessions: AgentSessions;
  let adapter: ReturnType<typeof fakeAdapter>;
  const env = { PATH: process.env.PATH ?? '' };

  beforeEach(async () => {
    root = await scratchDir('tool-policy');
    store = await StateStore.open(path.join(root, 'state'));
    const cli = new FakeCli();
    const tmux = new FakeTmux('/fake/socket', cli);
    adapter = Object.assign(fakeAdapter(cli), { toolPolicies: ['default', 'read-only'] as const });
    sessions = new AgentSessions(store, { tmux: () => tmux, adapter: () => adapter });
  });
  afterEach(async () => removeScratch(root));

  it('is recorded, handed to the launch, and a different one on continue is stale_handle naming toolPolicy', async () => {
    const { handle } = await sessions.start({ provider: 'claude-code', message: 'one', cwd: root, env, toolPolicy: 'read-only', timeoutSeconds: 5 });
    expect(handle.config.toolPolicy).toBe('read-only');
    expect(adapter.launches.at(-1)?.config.toolPolicy).toBe('read-only');
    const stale = await sessions.continue({ ref: handle.id, message: 'two', env, toolPolicy: 'default' }).catch((e) => e);
    expect(stale).toMatchObject({ kind: 'stale_handle', field: 'toolPolicy', expected: 'read-only', actual: 'default', exitCode: 6 });
    const same = await sessions.continue({ ref: handle.id, message: 'two', env, toolPolicy: 'read-only', timeoutSeconds: 5 });
    expect(same.turn.status).toBe('completed');
  });

  it('a policy the adapter does not map, or an unknown one, is usage before any handle is saved', async () => {
    expect(await kindOf(sessions.start({ provider: 'claude-code', message: 'one', cwd: root, env, toolPolicy: 'bypass' }))).toBe('usage');
    expect(await kindOf(sessions.start({ provider: 'claude-code', message: 'one', cwd: root, env, toolPolicy: 'yolo' }))).toBe('usage');
    expect(await store.listHandles()).toEqual([]);
    expect(adapter.launches).toEqual([]);
  });

  it('checkStability names toolPolicy', async () => {
    const dir = await fs.realpath(root);
    const recorded = { workingDir: dirIdentity(dir), model: null, systemPromptHash: null, systemPrompt: null, mcpConfigHash: null, mcpConfigPath: null, toolPolicy: 'default' };
    await expect(checkStability(recorded, { toolPolicy: 'bypass' })).rejects.toMatchObject({ kind: 'stale_handle', field: 'toolPolicy' });
    await expect(checkStability(recorded, { toolPolicy: 'default' })).resolves.toBeUndefined();
  });
});
