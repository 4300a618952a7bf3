// Writes test/support/test-durations.json, the seconds each test file took, from a vitest JSON
// report (.ci/run writes .tmp/vitest.json): the order test/support/duration-sequencer.ts runs
// the files in. Usage: [TEST_ROOT=<the checkout the report ran in>] node scripts/test-durations.mjs [report.json]
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const report = JSON.parse(readFileSync(process.argv[2] ?? '.tmp/vitest.json', 'utf8'));
const seconds = {};
for (const file of report.testResults) {
  const name = path.relative(process.env.TEST_ROOT ?? process.cwd(), file.name).split(path.sep).join('/');
  seconds[name] = Math.round((file.endTime - file.startTime) / 100) / 10;
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([, a], [, b]) => b - a));
const out = { comment: 'Seconds per test file on the run of the date below (scripts/test-durations.mjs); the order test/support/duration-sequencer.ts runs files in.', measured: new Date().toISOString().slice(0, 10), seconds: sorted };
writeFileSync('test/support/test-durations.json', `${JSON.stringify(out, null, 2)}\n`);
console.log(`test/support/test-durations.json: ${Object.keys(sorted).length} files, ${Math.round(Object.values(sorted).reduce((s, x) => s + x, 0))} s in all`);
