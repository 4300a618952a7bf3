import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shellQuote, viewJson } from '../../src/commands/inspect.js';
import { checkStability, dirIdentity, sha256 } from '../../src/engine/stability.js';
import { StateStore } from '../../src/state/store.js';
import { baseEnv, runCal, scratchDir } from '../support/cal.js';
import { fakeCli } from '../support/structured-fakes.js';

/** Issue 20, item 10: what people read of inspect, busy and stale errors. */
describe('output polish', () => {
  let root: string;
  let env: Record<string, string>;
  const cal = (...args: string[]) => runCal(args, { env, cwd: root });
  beforeAll(async () => {
    root = await fs.realpath(await scratchDir('polish'));
    await fs.mkdir(path.join(root, 'home'));
    env = baseEnv({ HOME: path.join(root, 'home'), CAL_STATE_DIR: path.join(root, 'state'), CURSOR_API_KEY: 'k' });
  });
  afterAll(async () => fs.rm(root, { recursive: true, force: true }));

  it('inspect on an empty state says so on stderr (stdout stays empty); the list has a header and aligned columns', async () => {
    const empty = await cal('inspect');
    expect([empty.code, empty.stdout, empty.stderr.trim()]).toEqual([0, '', `cal: no handles in ${path.join(root, 'state')}; start one with cal start`]);
    for (const name of ['a', 'a-much-longer-name']) {
      const s = await cal('start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', root, '--name', name, 'hi');
      expect(s.code, s.stderr).toBe(0);
    }
    const list = (await cal('inspect')).stdout.trimEnd().split('\n');
    expect(list[0]).toMatch(/^HANDLE +NAME +PROVIDER +CLI +TRANSPORT +PANE +STATUS +LAST TURN +UPDATED +CWD$/);
    expect(list).toHaveLength(3);
    const col = (line: string, word: string) => line.indexOf(word);
    expect(col(list[1]!, 'cursor')).toBe(col(list[0]!, 'PROVIDER'));
    expect(col(list[2]!, 'cursor')).toBe(col(list[0]!, 'PROVIDER'));
  });

  it('inspect filters the list by --cwd, --provider and --live; a bad filter is a usage error (issue 41)', async () => {
    const other = path.join(root, 'other');
    await fs.mkdir(other, { recursive: true });
    const s = await cal('start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', other, '--name', 'elsewhere', 'hi');
    expect(s.code, s.stderr).toBe(0);
    const names = async (...args: string[]) => {
      const run = await cal('inspect', '--json', ...args);
      expect(run.code, run.stderr).toBe(0);
      return (run.json.handles as Array<{ name: string; paneAlive: boolean }>).map((h) => h.name);
    };
    // Newest activity first: the handle started last leads.
    expect((await names())[0]).toBe('elsewhere');
    expect(await names('--cwd', other)).toEqual(['elsewhere']);
    expect((await names('--cwd', root)).sort()).toEqual(['a', 'a-much-longer-name']);
    expect(await names('--provider', 'codex')).toEqual([]);
    expect(await names('--provider', 'cursor')).toHaveLength(3);
    // Structured sessions with no turn in flight: nothing live.
    expect(await names('--live')).toEqual([]);
    const none = await cal('inspect', '--provider', 'codex');
    expect([none.code, none.stdout]).toEqual([0, '']);
    expect(none.stderr).toContain('cal: no handles match --provider codex (of 3 in');
    for (const bad of [['--provider', 'nope'], ['--cwd', path.join(root, 'missing')], ['elsewhere', '--live']]) {
      const run = await cal('inspect', ...bad);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/^cal: usage: /);
    }
  });

  it('busy errors name the handle, never the lock file', async () => {
    const store = await StateStore.open(path.join(root, 'state'));
    const id = (await cal('inspect', 'a', '--json')).json.id as string;
    const held = await store.locks.acquire(`handle-${id}`);
    try {
      const busy = await cal('continue', 'a', 'hello');
      expect(busy.code).toBe(5);
      expect(busy.stderr).toContain(`cal: busy: handle ${id} is busy`);
      expect(busy.stderr).not.toContain(`handle-${id}`);
    } finally {
      await held.release();
    }
    const lock = await store.locks.acquire('named-gate');
    try {
      const res = await cal('lock', 'gate', '--', 'true');
      expect([res.code, res.stderr.trim()]).toEqual([5, expect.stringMatching(/^cal: busy: lock gate is busy/)]);
      // Issue 41: a lock is held, not a handle continued.
      expect(res.stderr).toMatch(/held by another process \(a cal lock command or a plan phase\); retry later, or pass --wait/);
      expect(res.stderr).not.toMatch(/continuing|handle/);
      const waited = await cal('lock', 'gate', '--wait=0.2', '--', 'true');
      expect([waited.code, waited.stderr.trim()]).toEqual([5, 'cal: busy: lock gate is still busy after waiting 0.2s: it is held by another process (a cal lock command or a plan phase); retry later']);
    } finally {
      await lock.release();
    }
  });

  it('inspect --json marks each pane current or not; the attach line is shell-quoted', async () => {
    const pane = (id: string, endedAt: string | null) => ({ tmux: { socket: '/s', session: `cal-h-${id}`, paneId: `%${id}` }, startedAt: 't', endedAt, endReason: endedAt ? 'lost_tmux' : null, launch: 'fresh' as const });
    const view = {
      handle: { id: 'h', panes: [pane('1', 't2'), pane('2', null)] },
      panes: [
        { label: 'cal-h-1 %1', current: false, alive: false, launch: 'fresh', startedAt: 't', endedAt: 't2', endReason: 'lost_tmux' },
        { label: 'cal-h-2 %2', current: true, alive: true, launch: 'resume', startedAt: 't', endedAt: null, endReason: null },
      ],
      currentPaneAlive: true,
      turns: [],
      events: [],
      screen: null,
      attach: null,
      certification: [],
    };
    const json = viewJson(view as unknown as Parameters<typeof viewJson>[0]) as { panes: Array<{ current: boolean; alive: boolean; tmux: { paneId: string } }> };
    expect(json.panes.map((p) => [p.tmux.paneId, p.current, p.alive])).toEqual([['%1', false, false], ['%2', true, true]]);
    expect(shellQuote('/tmp/state dir/tmux.sock')).toBe("'/tmp/state dir/tmux.sock'");
    expect(shellQuote('=cal-abc-1')).toBe('=cal-abc-1');
    expect(shellQuote("it's")).toBe("'it'\\''s'");
  });

  it('stale errors show the prompts and MCP file paths, not only hashes (the fields keep the hashes)', async () => {
    const dir = await fs.mkdtemp(path.join(root, 'w-'));
    const mcp = path.join(dir, 'mcp.json');
    const other = path.join(dir, 'other.json');
    await fs.writeFile(mcp, '{"mcpServers":{}}');
    await fs.writeFile(other, '{"mcpServers":{"x":{"command":"y"}}}');
    const recorded = { workingDir: dirIdentity(dir), model: null, systemPromptHash: sha256('Be brief.'), systemPrompt: 'Be brief.', mcpConfigHash: sha256('{"mcpServers":{}}'), mcpConfigPath: mcp, toolPolicy: 'default' };
    const prompt = await checkStability(recorded, { systemPrompt: 'Be long.' }).catch((e) => e);
    expect(prompt.message).toContain('recorded "Be brief.", got "Be long."');
    expect(prompt.expected).toBe(sha256('Be brief.'));
    const given = await checkStability(recorded, { mcpConfig: other }).catch((e) => e);
    expect(given.message).toContain(`recorded ${mcp}`);
    expect(given.message).toContain(`got ${other}`);
    await fs.writeFile(mcp, '{"mcpServers":{"z":{"command":"q"}}}');
    const changed = await checkStability(recorded, {}).catch((e) => e);
    expect(changed.message).toMatch(/file .*mcp\.json changed \(sha256 [0-9a-f]{12}… when the session started, [0-9a-f]{12}… now\)/);
  });
});
