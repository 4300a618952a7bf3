import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StateStore } from '../../src/state/store.js';
import { baseEnv, runCal, scratchDir } from '../support/cal.js';
import { calBin } from '../support/clis.js';
import { fakeCli } from '../support/structured-fakes.js';

/**
 * Issue 20, item 5: a reader that closes the pipe early (`| head -1`, `| true`) ends cal quietly:
 * no stack trace, cal's own exit code, and a turn in flight still settles. Real pipes, through
 * bash, with more output than a pipe buffer holds. The session runs on the Cursor stand-in.
 */
describe('a closed stdout pipe', () => {
  let root: string;
  let state: string;
  let env: Record<string, string>;
  let handleId: string;

  /** Runs `cal <args> | <reader>` in bash; cal's own exit code is reported by PIPESTATUS. */
  async function piped(args: string, reader: string): Promise<{ calExit: number; stdout: string; stderr: string }> {
    const script = `${JSON.stringify(process.execPath)} ${JSON.stringify(calBin)} --state-dir ${JSON.stringify(state)} ${args} | ${reader}; echo "cal-exit=\${PIPESTATUS[0]}" >&2`;
    const res = await execa('bash', ['-c', script], { env, extendEnv: false, reject: false, timeout: 60_000 });
    const m = /cal-exit=(\d+)/.exec(res.stderr);
    return { calExit: Number(m?.[1] ?? -1), stdout: res.stdout, stderr: res.stderr.replace(/cal-exit=\d+\n?/, '').trim() };
  }

  beforeAll(async () => {
    root = realpathSync(await scratchDir('closed-pipe'));
    state = path.join(root, 'state');
    await fs.mkdir(path.join(root, 'home'));
    env = baseEnv({ HOME: path.join(root, 'home'), CURSOR_API_KEY: 'test-key' });
    const start = await runCal(['--state-dir', state, 'start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', root, '--json', 'Remember the codeword TANGO.'], { env });
    expect(start.code, start.stderr).toBe(0);
    handleId = start.json.handle;
    // More than a pipe buffer of output: many events on the handle, many handles in the list.
    const store = await StateStore.open(state);
    for (let i = 0; i < 1500; i++) await store.appendEvent({ time: new Date().toISOString(), handle: handleId, event: 'running', detail: { filler: 'x'.repeat(40), i } });
    const text = await fs.readFile(store.handleFile(handleId), 'utf8');
    for (let i = 0; i < 1200; i++) await fs.writeFile(store.handleFile(`copy${String(i).padStart(6, '0')}`), text.replace(handleId, `copy${String(i).padStart(6, '0')}`), { mode: 0o600 });
  }, 120_000);

  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  for (const [args, lines] of [
    ['inspect', 3],
    ['inspect HANDLE', 3],
    ['events HANDLE', 1],
    ['events HANDLE --follow', 1],
  ] as const) {
    it(`cal ${args} | head -${lines} ends quietly with exit 0`, async () => {
      const res = await piped(args.replace('HANDLE', handleId), `head -${lines}`);
      expect(res.stderr).toBe('');
      expect(res.calExit).toBe(0);
      expect(res.stdout.split('\n')).toHaveLength(lines);
    });
  }

  // cal exits as soon as its command is done (bin/cal.cjs), not by draining the event loop: a
  // reader that takes its time still gets every byte.
  it('a reader that waits before it reads still gets all of cal inspect --json and cal events', async () => {
    const inspected = await piped('inspect --json', '(sleep 1; cat)');
    expect(inspected.calExit).toBe(0);
    expect(JSON.parse(inspected.stdout).handles).toHaveLength(1201);
    const events = await piped(`events ${handleId}`, '(sleep 1; cat)');
    expect(events.calExit).toBe(0);
    const lines = events.stdout.split('\n');
    expect(lines.filter((l) => l.includes('"filler"'))).toHaveLength(1500);
    expect(() => lines.map((l) => JSON.parse(l))).not.toThrow();
  });

  it('cal continue … | head -1 and | true: the turn completes, exit 0, nothing but the handle line on stderr', async () => {
    const headed = await piped(`continue ${handleId} 'What was the codeword?'`, 'head -1');
    expect([headed.calExit, headed.stdout, headed.stderr]).toEqual([0, 'The codeword was TANGO.', `handle: ${handleId}`]);
    // `true` never reads: every write cal makes meets a closed pipe.
    const closed = await piped(`continue ${handleId} --stream --json 'What was the codeword?'`, 'true');
    expect([closed.calExit, closed.stderr]).toEqual([0, '']);
    const turns = (await runCal(['--state-dir', state, 'inspect', handleId, '--json'], { env })).json.turns;
    expect(turns.map((t: { status: string }) => t.status)).toEqual(['completed', 'completed', 'completed']);
  });
});
