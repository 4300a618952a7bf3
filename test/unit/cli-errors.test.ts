import net from 'node:net';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, runCal, scratchDir } from '../support/cal.js';

/**
 * Issue 20, item 6: argument and setup errors follow the contract: one line on stderr,
 * `cal: <kind>: <message>`, the documented exit code, and one JSON object with --json, whether
 * commander, the state directory, `cal lock` or `cal model serve` raised them. The built cal.
 */
describe('argument and setup errors', () => {
  let root: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    root = await scratchDir('cli-errors');
    env = baseEnv({ HOME: root, CAL_STATE_DIR: path.join(root, 'state') });
  });
  afterAll(async () => fs.rm(root, { recursive: true, force: true }));

  const cal = (...args: string[]) => runCal(args, { env, cwd: root, timeoutMs: 30_000 });
  const oneLine = (stderr: string) => stderr.trim().split('\n');

  it('commander errors: one cal line with exit 2, or JSON on stdout with --json', async () => {
    const missing = await cal('start', '--json', 'hi');
    expect([missing.code, missing.json, missing.stderr]).toEqual([2, { error: { kind: 'usage', message: 'required option --provider <name> not specified' } }, '']);
    const plain = await cal('start', 'hi');
    expect([plain.code, plain.stdout, oneLine(plain.stderr)]).toEqual([2, '', ['cal: usage: required option --provider <name> not specified']]);
    const badChoice = await cal('start', '--provider', 'nope', '--json', 'hi');
    expect(badChoice.code).toBe(2);
    expect(badChoice.json.error).toMatchObject({ kind: 'usage', message: expect.stringContaining("argument 'nope' is invalid") });
    const noArg = await cal('continue');
    expect([noArg.code, oneLine(noArg.stderr)]).toEqual([2, ["cal: usage: missing required argument 'handle'"]]);
    const word = await cal('strat');
    expect([word.code, oneLine(word.stderr)]).toEqual([2, ["cal: usage: unknown command 'strat' (Did you mean start?)"]]);
  });

  it('an unknown or misspelt flag is reported as unknown, not as the required option it failed to be', async () => {
    const typo = await cal('start', '--provder', 'codex', 'hi');
    expect([typo.code, oneLine(typo.stderr)]).toEqual([2, ["cal: usage: unknown option '--provder' (Did you mean --provider?)"]]);
    const unknown = await cal('continue', 'h', '--bogus', '--json', 'hi');
    expect([unknown.code, unknown.json]).toEqual([2, { error: { kind: 'usage', message: "unknown option '--bogus'" } }]);
  });

  it('a state directory that is a file, under a file, or empty is a usage error (exit 2), never internal nor the default', async () => {
    const file = path.join(root, 'a-file');
    await fs.writeFile(file, 'x');
    const isFile = await cal('--state-dir', file, 'inspect');
    expect([isFile.code, oneLine(isFile.stderr)]).toEqual([2, [`cal: usage: state directory ${file} is a file, not a directory`]]);
    const under = await cal('--state-dir', path.join(file, 'sub'), 'inspect', '--json');
    expect([under.code, under.json.error.kind]).toEqual([2, 'usage']);
    expect(under.json.error.message).toMatch(/a part of its path is a file/);
    for (const args of [['--state-dir', '', 'inspect'], ['--state-dir=', 'inspect']]) {
      const empty = await cal(...args);
      expect([empty.code, oneLine(empty.stderr)]).toEqual([2, ['cal: usage: --state-dir is empty: give a directory, or leave the option out for the default']]);
    }
  });

  it('cal lock with a command that cannot run: a message and exit 2; otherwise the command\'s own code', async () => {
    const missing = await cal('lock', 'x', '--', 'nosuchcmd-for-cal');
    expect([missing.code, oneLine(missing.stderr)]).toEqual([2, ['cal: usage: cannot run "nosuchcmd-for-cal": command not found']]);
    expect((await cal('lock', 'x', '--', 'sh', '-c', 'exit 7')).code).toBe(7);
    expect((await cal('lock', 'x', '--', 'sh', '-c', 'kill -TERM $$')).code).toBe(128 + 15);
  });

  it('cal model serve on a port in use: cal: usage: …, exit 2', async () => {
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const res = await cal('model', 'serve', '--port', String(port));
      expect([res.code, oneLine(res.stderr)]).toEqual([2, [`cal: usage: cannot listen on 127.0.0.1:${port}: the port is in use`]]);
      const bad = await cal('model', 'serve', '--port', 'eighty');
      expect([bad.code, oneLine(bad.stderr)]).toEqual([2, ['cal: usage: --port must be a whole number 0..65535, got eighty']]);
    } finally {
      busy.close();
    }
  });
});
