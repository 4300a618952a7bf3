import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCal } from '../support/cal.js';

/** Issue 43: `cal doctor --json` reports each provider's CLI, tmux and the state dir; exit 0 only when all asked for is usable. */
const root = mkdtempSync(path.join(os.tmpdir(), 'cal-doctor-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A PATH holding a stand-in `pi` that reports `version`, then the system's folders (tmux among them). */
function envWithPi(version: string | null): Record<string, string> {
  const bin = mkdtempSync(path.join(root, 'bin-'));
  if (version !== null) writeFileSync(path.join(bin, 'pi'), `#!/bin/sh\necho ${version}\n`, { mode: 0o755 });
  return { PATH: `${bin}:/usr/local/bin:/usr/bin:/bin`, HOME: root, LANG: 'C.UTF-8' };
}

describe('cal doctor', () => {
  it('a supported release on PATH, tmux and a usable state dir: ready, exit 0', async () => {
    const run = await runCal(['--state-dir', path.join(root, 'state-ok'), 'doctor', '--provider', 'pi', '--json'], { env: envWithPi('0.73.1') });
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.providers).toEqual([expect.objectContaining({ provider: 'pi', status: 'ok', usable: true, version: '0.73.1', floor: '0.51.0', certified: expect.any(String) })]);
    expect(run.json.multiplexer).toMatchObject({ usable: true, version: expect.stringMatching(/^\d/) });
    expect(run.json.stateDir).toEqual({ usable: true, path: path.join(root, 'state-ok'), note: null });
    expect(run.json.ready).toBe(true);
  });

  it('a release below the floor is unsupported, a missing CLI says how to install it: exit 18', async () => {
    const old = await runCal(['--state-dir', path.join(root, 'state-old'), 'doctor', '--provider', 'pi', '--json'], { env: envWithPi('0.10.0') });
    expect(old.code).toBe(18);
    expect(old.json.providers[0]).toMatchObject({ status: 'unsupported', usable: false, version: '0.10.0', note: expect.stringContaining('older than 0.51.0') });
    const missing = await runCal(['--state-dir', path.join(root, 'state-missing'), 'doctor', '--provider', 'codex', '--json'], { env: envWithPi(null) });
    expect(missing.code).toBe(18);
    expect(missing.json.providers[0]).toMatchObject({ provider: 'codex', status: 'missing', usable: false, note: expect.stringContaining('npm install -g @openai/codex') });
  });

  it('an unusable state dir is reported, not thrown; the table names each part', async () => {
    const file = path.join(root, 'a-file');
    writeFileSync(file, 'x');
    const run = await runCal(['--state-dir', file, 'doctor', '--provider', 'pi', '--json'], { env: envWithPi('0.73.1') });
    expect(run.code).toBe(18);
    expect(run.json.stateDir).toMatchObject({ usable: false, path: file, note: expect.any(String) });
    mkdirSync(path.join(root, 'state-table'));
    const table = await runCal(['--state-dir', path.join(root, 'state-table'), 'doctor', '--provider', 'pi'], { env: envWithPi('0.73.1') });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^provider\s+status\s+version\s+supported\s+where\n/);
    expect(table.stdout).toMatch(/^pi\s+ok\s+0\.73\.1\s+0\.51\.0 – /m);
    expect(table.stdout).toMatch(/^tmux\s+ok /m);
    expect(table.stdout.trimEnd().split('\n').at(-1)).toBe('ready');
  });

  it('with no --provider: ready (exit 0) when one CLI is usable, the missing ones listed as information; none usable is not ready', async () => {
    const run = await runCal(['--state-dir', path.join(root, 'state-bare'), 'doctor', '--json'], { env: envWithPi('0.73.1') });
    expect(run.code, run.stderr).toBe(0);
    expect(run.json).toMatchObject({ ready: true, strict: false });
    expect(run.json.providers.find((p: any) => p.provider === 'pi')).toMatchObject({ usable: true });
    expect(run.json.providers.find((p: any) => p.provider === 'pi' ? false : p.status === 'missing')).toBeTruthy();
    const table = await runCal(['--state-dir', path.join(root, 'state-bare'), 'doctor'], { env: envWithPi('0.73.1') });
    expect(table.code).toBe(0);
    const total = run.json.providers.length;
    expect(table.stdout).toContain(`CLIs not usable here (information: cal runs the `);
    expect(table.stdout.trimEnd().split('\n').at(-1)).toMatch(new RegExp(`^ready \\(\\d+ of ${total} CLIs\\)$`));
    // A PATH holding tmux and node alone: no CLI at all.
    const tmuxOnly = mkdtempSync(path.join(root, 'tmux-only-'));
    for (const tool of ['tmux', 'node']) symlinkSync(execFileSync('sh', ['-c', `command -v ${tool}`]).toString().trim(), path.join(tmuxOnly, tool));
    const none = await runCal(['--state-dir', path.join(root, 'state-bare'), 'doctor'], { env: { PATH: tmuxOnly, HOME: root, LANG: 'C.UTF-8' } });
    expect(none.code, none.stdout).toBe(18);
    expect(none.stdout.trimEnd().split('\n').at(-1)).toBe('not ready (exit 18): no CLI is usable');
  });

  it("Pi's install hint names its current package", async () => {
    const run = await runCal(['--state-dir', path.join(root, 'state-pi'), 'doctor', '--provider', 'pi', '--json'], { env: envWithPi(null) });
    expect(run.code).toBe(18);
    expect(run.json.providers[0].note).toContain('npm install -g @earendil-works/pi-coding-agent');
  });

  it('an unknown provider is a usage error', async () => {
    const run = await runCal(['doctor', '--provider', 'nope'], { env: envWithPi(null) });
    expect([run.code, run.stderr]).toEqual([2, expect.stringMatching(/^cal: usage: /)]);
  });
});
