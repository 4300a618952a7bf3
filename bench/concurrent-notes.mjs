// The notes printed beside the 16-at-once target of bench/run.mjs, for the reader, never targets:
// the same 16 turns without cal, with each cal in a session of its own, and through the library.
// Each takes { dir, handles, env, report }: the state dir and handles of the 16 live Claude panes.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { TURN_END, calBin, codeword, fmt, median, must, now, root, timed, watchFor } from './lib.mjs';

const cal = (args, env, dir) => timed(process.execPath, [calBin, '--state-dir', dir, ...args], { env });

const spread = (times) => {
  const fastest = Math.min(...times);
  const slowest = Math.max(...times);
  return `fastest ${fmt(fastest)}, median ${fmt(median(times))}, slowest ${fmt(slowest)}, ${(slowest / fastest).toFixed(2)}x`;
};

/** Linux's autogroup setting (CPU shared between sessions before processes), or null elsewhere. */
function autogroup() {
  try {
    return readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1' ? 'on' : 'off';
  } catch {
    return null;
  }
}

/**
 * For the reader of the 16-at-once row, not a target: the same 16 `cal continue`s, each started
 * in a session of its own (`setsid -w`). Where the kernel shares the CPU between sessions first
 * (Linux autogroup), the 16 cals of one script are one group against the 16 panes, each a session
 * of its own (tmux gives every pane one): while k turns run, the cals still starting share one
 * (k + 1)th of the cores between them, which is what spreads the target row's turns.
 */
export async function inSessionsOfTheirOwn({ dir, handles, env, report }) {
  if (spawnSync('setsid', ['--version']).status !== 0) throw new Error('no setsid(1) on this machine');
  const runs = await Promise.all(
    handles.map((h, i) => timed('setsid', ['-w', process.execPath, calBin, '--state-dir', dir, 'continue', h, `What was the codeword? (own session ${i})`], { env })),
  );
  const wrong = runs.filter((r, i) => r.code !== 0 || !codeword(r, `CW${i}`)).length;
  if (wrong) throw new Error(`${wrong} of ${handles.length} answered wrong`);
  report.notes.push(`the same ${handles.length} cals, each in a session of its own (\`setsid -w cal continue …\`; autogroup ${autogroup() ?? 'not on this kernel'}): ${spread(runs.map((r) => r.ms))}`);
}

/** For the reader, not a target: the same 16 continued at once by one program through the library. */
export async function throughLibrary({ dir, handles, env, report }) {
  const { openSessions } = await import(path.join(root, 'dist', 'index.js'));
  const sessions = await openSessions({ stateDir: dir, env });
  const results = await Promise.all(
    handles.map(async (h, i) => {
      const t0 = now();
      const { turn } = await sessions.continue(h, `What was the codeword? (library ${i})`);
      return { ms: now() - t0, right: turn.answer?.includes(`The codeword was CW${i}.`) === true };
    }),
  );
  const wrong = results.filter((r) => !r.right).length;
  if (wrong) throw new Error(`${wrong} of ${handles.length} answered wrong`);
  report.notes.push(`the same ${handles.length} continued at once through the library, in this process: ${spread(results.map((r) => r.ms))}`);
}

/**
 * For the reader of the 16-at-once row, not a target: the same 16 live panes sent a message at once
 * without cal (tmux send-keys from this process, each turn timed to its end record in the
 * transcript), so the spread that Claude's own turns make on these cores is seen beside cal's.
 */
export async function withoutCal({ dir, handles, env, report }) {
  const views = [];
  for (const h of handles) views.push(JSON.parse(must(await cal(['inspect', h, '--json'], env, dir), 'cal inspect (16)').stdout));
  const { tmuxSocketFor } = await import(path.join(root, 'dist', 'engine', 'tmux-socket.js'));
  const socket = await tmuxSocketFor(path.join(dir, 'tmux'));
  const times = await Promise.all(
    views.map(async (v, i) => {
      const pane = v.panes.find((p) => p.endedAt === null)?.tmux.paneId;
      if (!pane) throw new Error(`handle ${v.id} has no live pane`);
      const watch = watchFor(v.provider.transcript.path, TURN_END);
      const t0 = now();
      must(await timed('tmux', ['-S', socket, 'send-keys', '-t', pane, '-l', `What was the codeword? (without cal ${i})`]), 'tmux send-keys');
      // Typed text and its Enter apart, as a person types: an Enter in the same breath can be swallowed.
      await new Promise((r) => setTimeout(r, 50));
      must(await timed('tmux', ['-S', socket, 'send-keys', '-t', pane, 'Enter']), 'tmux send-keys Enter');
      const endAt = await watch.wait(60_000).finally(() => watch.stop());
      return endAt - t0;
    }),
  );
  report.notes.push(`the same ${handles.length} panes sent a message at once without cal (tmux send-keys, timed to each turn's end record): ${spread(times)}`);
}
