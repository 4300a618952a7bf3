#!/usr/bin/env node
// For the reader of the live-pane row of `npm run bench`, not a target: the same `continue` into
// the same live pane, made by a program that has cal loaded (the library, as a chat server or a
// workflow engine uses it), so no Node start-up and no module loading are in the figure. Run by
// bench/run.mjs as a child of its own (cal's timing marks are read from CAL_TRACE_TIMING when
// cal's modules load); prints one JSON line.
//
// Measured as the command line's row is: call → `paste-sent` mark, plus the end-of-turn record
// reaching the transcript (a file watch) → the call's promise settled. The first call is not
// counted: it loads the modules a continue uses, which a running program has done long before.
//
// argv: <state dir> <handle id> <transcript> <turn-end needle> <rounds> <trace file>, for the
// Claude session of bench/run.mjs (told the codeword BENCH) with a live pane.
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { median, now, readMarks, root, watchFor } from './lib.mjs';

const [stateDir, handle, transcript, needle, roundsArg, trace] = process.argv.slice(2);
if (!trace) throw new Error('usage: live-library.mjs <state dir> <handle id> <transcript> <turn-end needle> <rounds> <trace file>');
process.env.CAL_TRACE_TIMING = trace;
const { openSessions } = await import(pathToFileURL(path.join(root, 'dist', 'index.js')).href);
const sessions = await openSessions({ stateDir, env: process.env });

const own = [];
const toPaste = [];
const afterEnd = [];
const rounds = Number(roundsArg);
for (let i = 0; i <= rounds; i++) {
  // A trace of this call's marks only.
  fs.rmSync(trace, { force: true });
  const watch = watchFor(transcript, needle);
  const startedAt = now();
  const { turn } = await sessions.continue(handle, `What was the codeword? (library ${i})`);
  const settledAt = now();
  // The watch runs in cal's own event loop here: when cal's read of the end record comes first,
  // its mark is the earlier sight of the end (never a smaller figure than the watch alone gives).
  const watchedAt = watch.seenAt();
  watch.stop();
  const marks = await readMarks(trace);
  const readAt = marks['end-read'];
  const endAt = watchedAt === null ? null : Math.min(watchedAt, readAt ?? watchedAt);
  if (!turn.answer?.includes('The codeword was BENCH.')) throw new Error(`the library's continue answered ${JSON.stringify(turn.answer)}`);
  const pasteAt = marks['paste-sent'];
  if (pasteAt === undefined) throw new Error("no paste-sent mark in cal's timing trace");
  if (endAt === null) throw new Error('no end-of-turn record seen');
  if (i === 0) continue;
  toPaste.push(pasteAt - startedAt);
  afterEnd.push(Math.max(0, settledAt - endAt));
  own.push(toPaste.at(-1) + afterEnd.at(-1));
}
console.log(JSON.stringify({ own: median(own), toPaste: median(toPaste), afterEnd: median(afterEnd) }));
