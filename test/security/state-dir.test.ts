import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import type { ModelServer } from '../../src/model/server.js';
import { parseHandleRef } from '../../src/state/store.js';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { recordFault } from '../support/fault-matrix.js';

/**
 * Issue 7: handle references, the state directory and cal's tmux socket, reached the way a user
 * or another local user would reach them. One real Claude Code session provides real state.
 */
const FILE = 'test/security/state-dir.test.ts';
const runningAsRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** Runs a command as the unprivileged `nobody` user (root can drop privileges here). */
async function asNobody(argv: string[]) {
  return execa('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', ...argv], { reject: false, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
}

async function walk(dir: string): Promise<{ file: string; mode: number; kind: string }[]> {
  const out: { file: string; mode: number; kind: string }[] = [];
  for (const entry of await fs.readdir(dir)) {
    const file = path.join(dir, entry);
    const st = await fs.lstat(file);
    const kind = st.isDirectory() ? 'dir' : st.isSocket() ? 'socket' : st.isSymbolicLink() ? 'symlink' : 'file';
    out.push({ file, mode: st.mode & 0o777, kind });
    if (st.isDirectory()) out.push(...(await walk(file)));
  }
  return out;
}

describe('handle references, state directory and tmux socket', () => {
  let suite: CliSuite;
  let server: ModelServer;
  let root: string;
  let state: string;
  let work: string;
  let handle = '';
  const outside = () => path.join(root, 'outside');

  const cal = (args: string[], opts: { input?: string; stateDir?: string } = {}) =>
    suite.cal(args, { input: opts.input, state: opts.stateDir });

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'sec-state' });
    ({ server, root, state, work } = suite);
    await fs.mkdir(outside(), { recursive: true });
    const run = await cal(['start', '--provider', 'claude-code', '--cwd', work, '--name', 'victim', 'Remember the codeword LYNX.']);
    expect(run.code).toBe(0);
    handle = handleFromStderr(run.stderr) ?? '';
  });

  afterAll(async () => {
    await suite?.close();
  });

  it('path-like handle references are usage errors (exit 2) for every command, before any file is touched', async () => {
    const refs = ['../../x', '../handles/' + handle, '/etc/passwd', path.join(state, 'handles', handle), 'a/b', '.hidden', '..', 'x'.repeat(65), 'ü'];
    const calls = [
      ...refs.map((ref) => ['continue', ref, 'hello']),
      ...['../../x', '/etc/passwd', '.hidden'].flatMap((ref) => [['inspect', ref], ['kill-tmux', ref], ['events', ref]]),
    ];
    for (let i = 0; i < calls.length; i += 6) {
      const batch = calls.slice(i, i + 6);
      const runs = await Promise.all(batch.map((args) => cal(args)));
      runs.forEach((run, j) => {
        expect(run.code, batch[j]!.join(' ')).toBe(2);
        expect(run.stderr).toMatch(/usage: .*not a handle id or name/);
      });
    }
    const json = await cal(['continue', '../../x', '--json', 'hello']);
    expect(json.json.error.kind).toBe('usage');
    const name = await cal(['start', '--provider', 'claude-code', '--cwd', work, '--name', '../evil', 'hello']);
    expect(name.code).toBe(2);
    // A NUL byte cannot pass through argv (execve refuses it); the parser refuses it directly.
    expect(() => parseHandleRef('victim\0../x')).toThrow(/not a handle id or name/);
    expect(() => parseHandleRef('abc\0')).toThrow();
    recordFault({
      id: 'state.handle-ref-path',
      area: 'state',
      fault: 'handle reference is a path: `../../x`, an absolute path, `a/b`, `.hidden`, NUL',
      how: '`cal continue|inspect|kill-tmux|events <ref>`; `cal start --name ../evil`',
      outcome: 'exit 2 (usage) before any file is opened; NUL refused by the parser (argv cannot carry it)',
      state: 'nothing read or written',
      test: FILE,
    });
  });

  it('creates its state directory 0700 with files 0600; the tmux socket lives in a 0700 folder of its own', async () => {
    expect((await fs.stat(state)).mode & 0o777).toBe(0o700);
    const entries = await walk(state);
    for (const e of entries) {
      if (e.kind === 'dir') expect(e.mode, e.file).toBe(0o700);
      else if (e.kind === 'file') expect(e.mode, e.file).toBe(0o600);
    }
    expect(entries.filter((e) => e.kind === 'file').length).toBeGreaterThan(2);
    const socket = await tmuxSocketFor(path.join(state, 'tmux'));
    const socketDir = await fs.stat(path.dirname(socket));
    expect(socketDir.mode & 0o777).toBe(0o700);
    expect(socketDir.uid).toBe(process.getuid!());
    expect((await fs.lstat(socket)).isSocket()).toBe(true);
  });

  it.skipIf(!runningAsRoot)('another user can neither reach the tmux socket nor read the state directory', async () => {
    const socket = await tmuxSocketFor(path.join(state, 'tmux'));
    const ls = await asNobody(['tmux', '-S', socket, 'list-sessions']);
    expect(ls.exitCode).not.toBe(0);
    expect(ls.stderr).toMatch(/Permission denied|error connecting/i);
    const keys = await asNobody(['tmux', '-S', socket, 'send-keys', '-t', 'cal', 'touch PWNED', 'Enter']);
    expect(keys.exitCode).not.toBe(0);
    const read = await asNobody(['ls', path.join(state, 'handles')]);
    expect(read.exitCode).not.toBe(0);
    // A deep state directory gets a socket alias under the temp dir: same guarantees.
    const deep = path.join(root, 'd'.repeat(60), 'e'.repeat(60), 'tmux');
    const alias = await tmuxSocketFor(deep);
    expect(alias.startsWith(path.join(path.dirname(alias)))).toBe(true);
    expect((await fs.stat(path.dirname(alias))).mode & 0o777).toBe(0o700);
    recordFault({
      id: 'state.tmux-socket-other-user',
      area: 'state',
      fault: "another local user tries cal's tmux socket and state directory",
      how: '`tmux -S <socket> list-sessions` / `send-keys` and `ls` as uid 65534 (nobody)',
      outcome: 'permission denied: the socket sits in a 0700 folder of cal (also the short alias under the temp dir)',
      state: 'session untouched',
      test: FILE,
    });
  });

  it('a state directory other users can write, or owned by another user, or a symlink, is refused', async () => {
    const open = path.join(root, 'open-state');
    await fs.mkdir(open, { mode: 0o700 });
    await fs.chmod(open, 0o777);
    const writable = await cal(['inspect'], { stateDir: open });
    expect(writable.code).toBe(2);
    expect(writable.stderr).toMatch(/writable by other users: run chmod 700/);
    expect(await fs.readdir(open)).toEqual([]);

    const groupW = path.join(root, 'group-state');
    await fs.mkdir(groupW, { mode: 0o700 });
    await fs.chmod(groupW, 0o770);
    expect((await cal(['inspect'], { stateDir: groupW })).code).toBe(2);

    const linked = path.join(root, 'linked-state');
    await fs.symlink(state, linked);
    const viaLink = await cal(['inspect'], { stateDir: linked });
    expect(viaLink.code).toBe(2);
    expect(viaLink.stderr).toMatch(/not a plain directory/);

    // A subfolder (here: handles) that became writable by others is refused too.
    await fs.chmod(path.join(state, 'handles'), 0o777);
    const sub = await cal(['inspect', handle]);
    await fs.chmod(path.join(state, 'handles'), 0o700);
    expect(sub.code).toBe(2);

    if (runningAsRoot) {
      const foreign = path.join(root, 'foreign-state');
      await fs.mkdir(foreign, { mode: 0o700 });
      await fs.chown(foreign, 65534, 65534);
      const other = await cal(['inspect'], { stateDir: foreign });
      expect(other.code).toBe(2);
      expect(other.stderr).toMatch(/belongs to another user/);
    }
    recordFault({
      id: 'state.dir-unsafe',
      area: 'state',
      fault: 'state directory writable by group/others, owned by another user, or a symlink',
      how: '`cal --state-dir <dir> inspect` on a 0777, 0770, foreign-owned or symlinked directory',
      outcome: 'exit 2 (usage) naming the problem and the fix (chmod 700); nothing created in it',
      state: 'directory left as it was',
      test: FILE,
    });
  });

  describe('nothing is read or written through a symlink planted in the state directory', () => {
    let modelTurns = 0;
    const beforeSend = () => {
      modelTurns = server.turnRequests().length;
    };
    const nothingSent = () => expect(server.turnRequests().length).toBe(modelTurns);
    const snapshot = async (p: string) => {
      const st = await fs.lstat(p);
      if (st.isDirectory()) return JSON.stringify((await fs.readdir(p)).sort());
      return `${st.mtimeMs}:${await fs.readFile(p, 'utf8')}`;
    };

    it('handles/<id>.json as a symlink (to a valid copy) is invalid_handle, not followed', async () => {
      const file = path.join(state, 'handles', `${handle}.json`);
      const target = path.join(outside(), 'handle.json');
      await fs.copyFile(file, target);
      await fs.rename(file, `${file}.real`);
      await fs.symlink(target, file);
      const before = await snapshot(target);
      beforeSend();
      const run = await cal(['continue', handle, 'hello']);
      const byName = await cal(['continue', 'victim', 'hello']);
      await fs.rm(file);
      await fs.rename(`${file}.real`, file);
      expect(run.code).toBe(4);
      expect(run.stderr).toMatch(/invalid_handle: .*symlink/);
      expect(byName.code).toBe(3);
      nothingSent();
      expect(await snapshot(target)).toBe(before);
      recordFault({
        id: 'state.symlink-handle', area: 'state', fault: 'handle file replaced by a symlink to a valid-looking copy',
        how: '`cal continue <id>` / `<name>`', outcome: 'exit 4 (invalid_handle, "is a symlink") by id; by name the link is not listed (exit 3); nothing sent',
        state: 'symlink target unchanged', test: FILE,
      });
    });

    it('handles/<id>.events.jsonl as a symlink: refused before anything is sent', async () => {
      const file = path.join(state, 'handles', `${handle}.events.jsonl`);
      const target = path.join(outside(), 'events.jsonl');
      await fs.copyFile(file, target);
      await fs.rename(file, `${file}.real`);
      await fs.symlink(target, file);
      const before = await snapshot(target);
      beforeSend();
      const run = await cal(['continue', handle, 'hello']);
      const view = await cal(['inspect', handle, '--json']);
      const events = await cal(['events', handle]);
      await fs.rm(file);
      await fs.rename(`${file}.real`, file);
      expect(run.code).toBe(4);
      expect(run.stderr).toMatch(/invalid_handle: .*symlink/);
      expect(view.code).toBe(4);
      expect(events.code).toBe(4);
      expect(events.stdout).toBe('');
      nothingSent();
      expect(await snapshot(target)).toBe(before);
      recordFault({
        id: 'state.symlink-events', area: 'state', fault: 'event log replaced by a symlink',
        how: '`cal continue`, `cal inspect`, `cal events` on the handle', outcome: 'exit 4 (invalid_handle) before anything is sent; inspect/events print nothing from the target',
        state: 'symlink target unchanged', test: FILE,
      });
    });

    it('turns/<id> as a symlinked folder: refused before anything is sent', async () => {
      const dir = path.join(state, 'turns', handle);
      const target = path.join(outside(), 'turns');
      await fs.cp(dir, target, { recursive: true });
      await fs.rename(dir, `${dir}.real`);
      await fs.symlink(target, dir);
      const before = await snapshot(target);
      beforeSend();
      const run = await cal(['continue', handle, 'hello']);
      const view = await cal(['inspect', handle, '--json']);
      await fs.rm(dir);
      await fs.rename(`${dir}.real`, dir);
      expect(run.code).toBe(4);
      expect(run.stderr).toMatch(/invalid_handle: .*symlink/);
      expect(view.code).toBe(4);
      nothingSent();
      expect(await snapshot(target)).toBe(before);
      recordFault({
        id: 'state.symlink-turns', area: 'state', fault: "a handle's turn folder replaced by a symlink",
        how: '`cal continue`, `cal inspect`', outcome: 'exit 4 (invalid_handle) before anything is sent',
        state: 'symlink target unchanged (no turn record written there)', test: FILE,
      });
    });

    it('locks: a symlinked lock file is moved aside unread; a symlinked queue folder is refused', async () => {
      const lock = path.join(state, 'locks', `handle-${handle}.lock`);
      const target = path.join(outside(), 'lock-target');
      await fs.writeFile(target, 'not yours\n');
      await fs.symlink(target, lock);
      const before = await snapshot(target);
      const run = await cal(['continue', handle, 'What was the codeword?']);
      expect(run.code).toBe(0);
      expect(run.stdout.trim()).toBe('The codeword was LYNX.');
      expect(await snapshot(target)).toBe(before);
      expect(existsSync(lock)).toBe(false);

      const queue = path.join(state, 'locks', `handle-${handle}.queue`);
      const qTarget = path.join(outside(), 'queue');
      await fs.mkdir(qTarget);
      await fs.rm(queue, { recursive: true, force: true });
      await fs.symlink(qTarget, queue);
      beforeSend();
      const wait = await cal(['continue', handle, '--wait=5', 'hello']);
      await fs.rm(queue);
      expect(wait.code).toBe(2);
      expect(wait.stderr).toMatch(/not a plain directory/);
      expect(await fs.readdir(qTarget)).toEqual([]);
      nothingSent();
      recordFault({
        id: 'state.symlink-locks', area: 'state', fault: 'lock file or wait-queue folder replaced by a symlink',
        how: '`cal continue <h>` and `cal continue <h> --wait=5`', outcome: 'lock symlink: moved aside without being read or written, the turn runs (exit 0); queue symlink: exit 2 (usage), nothing sent',
        state: 'symlink targets unchanged', test: FILE,
      });
    });

    it("tmux/tmux.sock as a symlink to another server's socket: refused, nothing pasted there", async () => {
      const sock = await tmuxSocketFor(path.join(state, 'tmux'));
      const evil = path.join(outside(), 'evil.sock');
      await execa('tmux', ['-S', evil, 'new-session', '-d', '-s', 'evil', '-x', '80', '-y', '20', 'cat'], { reject: false });
      try {
        await fs.rename(sock, `${sock}.real`);
        await fs.symlink(evil, sock);
        beforeSend();
        let run;
        try {
          run = await cal(['continue', handle, '--timeout', '15', 'hello from cal']);
        } finally {
          await fs.rm(sock);
          await fs.rename(`${sock}.real`, sock);
        }
        const screen = (await execa('tmux', ['-S', evil, 'capture-pane', '-p', '-t', 'evil'], { reject: false })).stdout;
        expect(screen).not.toContain('hello from cal');
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(/not a socket/);
        nothingSent();
      } finally {
        await execa('tmux', ['-S', evil, 'kill-server'], { reject: false });
      }
      const ok = await cal(['continue', handle, 'What was the codeword?']);
      expect(ok.code).toBe(0);
      recordFault({
        id: 'state.symlink-tmux-socket', area: 'state', fault: "cal's tmux socket replaced by a symlink to another tmux server",
        how: '`cal continue <h>` while the symlink is in place', outcome: 'exit 2 (usage, "not a socket"); nothing pasted into the other server, nothing sent',
        state: 'handle unchanged; the session continues once the socket is back', test: FILE,
      });
    });
  });
});
