import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, runCal, scratchDir } from '../support/cal.js';

/**
 * Commands of one machine (docs/fleet.md): an explicit `--fleet` on them is a usage error with one
 * line, before anything runs; CAL_FLEET in the environment (here an unreachable Redis, so a command
 * that used it would exit 17) does not stop them from running on this machine.
 */
describe('commands that run on this machine only, with a fleet named', () => {
  let root: string;
  let env: Record<string, string>;
  const unreachable = 'redis://127.0.0.1:1';

  beforeAll(async () => {
    root = await scratchDir('fleet-local');
    env = baseEnv({ HOME: path.join(root, 'home') });
    await fs.mkdir(env.HOME!, { recursive: true });
  });

  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  const state = () => path.join(root, 'state');
  const local: Array<[string, string[]]> = [
    ['run', ['run', 'plan.yaml']],
    ['lock', ['lock', 'L', '--', 'true']],
    ['certify', ['certify', '--provider', 'pi']],
    ['doctor', ['doctor']],
    ['demo', ['demo']],
    ['model serve', ['model', 'serve']],
    ['model env', ['model', 'env', '--url', 'http://127.0.0.1:9']],
    ['reap', ['reap', '--dry-run']],
  ];

  it.each(local)('cal --fleet <url> %s is a usage error (2), one line, nothing run', async (name, args) => {
    const r = await runCal(['--state-dir', state(), '--fleet', unreachable, ...args], { env, timeoutMs: 30_000 });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^cal: usage: cal ${name} .*, not through a fleet: run it without --fleet, on the machine it concerns$`));
    expect(r.stderr.split('\n')).toHaveLength(1);
    const json = await runCal(['--state-dir', state(), '--fleet', unreachable, ...args, '--json'], { env, timeoutMs: 30_000 });
    expect(json.code).toBe(2);
  });

  it('with CAL_FLEET in the environment they run on this machine: doctor, lock, reap', async () => {
    const fleetEnv = { ...env, CAL_FLEET: unreachable };
    const doctor = await runCal(['--state-dir', state(), 'doctor', '--json'], { env: fleetEnv, timeoutMs: 60_000 });
    expect([0, 18], doctor.stderr).toContain(doctor.code);
    expect(doctor.json.providers.length).toBeGreaterThan(0);
    const marker = path.join(root, 'locked');
    const lock = await runCal(['--state-dir', state(), 'lock', 'L', '--', 'sh', '-c', `printf "%s" "\${CAL_FLEET-unset}" > ${marker}`], { env: fleetEnv });
    expect(lock.code, lock.stderr).toBe(0);
    // Nothing it starts inherits the fleet either.
    expect(await fs.readFile(marker, 'utf8')).toBe('unset');
    const reap = await runCal(['--state-dir', state(), 'reap', '--dry-run'], { env: fleetEnv });
    expect(reap.code, reap.stderr).toBe(0);
    expect(reap.stdout + reap.stderr).toMatch(/would end 0 of 0 live panes/);
  }, 90_000);

  it('a command that goes through the fleet still does with CAL_FLEET: inspect reaches for the (unreachable) Redis, 17', async () => {
    const r = await runCal(['--state-dir', state(), 'inspect', '--json'], { env: { ...env, CAL_FLEET: unreachable } });
    expect(r.code, r.stderr).toBe(17);
    expect(r.json.error.kind).toBe('host_unavailable');
  });
});
