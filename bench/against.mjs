#!/usr/bin/env node
// Benchmark (not a test): this cal against other builds of cal, side by side in one run, the way
// issue 51 measured round 3 (91258d3) against the cal before it (07a3f5b). Each cal gets sessions
// of its own (a live Claude Code pane, a structured Claude Code session, a structured Codex one)
// against the scripted model; one bare session per CLI is resumed by the CLI itself (`claude -p
// --resume`, npm's `codex exec resume --json`: what a script runs instead). Turns come in rounds
// whose order rotates, each once the one before has exited; medians.
//
//   git clone -q . /tmp/cal-07a3f5b && git -C /tmp/cal-07a3f5b checkout -q 07a3f5b
//   (cd /tmp/cal-07a3f5b && ln -s "$OLDPWD/node_modules" node_modules && npm run build)
//   npm run build && node bench/against.mjs /tmp/cal-07a3f5b [more checkouts …]
//
// Writes docs/performance-against.md (BENCH_OUT=<file> elsewhere); BENCH_RUNS rounds (default 11).
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { binDir, codeword, fmt, median, must, root, timed, untilQuiet, withoutCaBundle } from './lib.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 11);
const others = process.argv.slice(2).map((d) => path.resolve(d));
if (others.length === 0) throw new Error('usage: node bench/against.mjs <built cal checkout> [more …]');
for (const d of others) if (!existsSync(path.join(d, 'bin', 'cal.cjs')) || !existsSync(path.join(d, 'dist'))) throw new Error(`${d}: no built cal there (bin/cal.cjs and dist/)`);

/** A checkout's commit, and whether what it builds from (src, scripts, bin) differs from it. */
function commitOf(dir) {
  const commit = spawnSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  if (!commit) return path.basename(dir);
  const dirty = spawnSync('git', ['-C', dir, 'status', '--porcelain', '--', 'src', 'scripts', 'bin'], { encoding: 'utf8' }).stdout.trim();
  return dirty ? `${commit} + changes` : commit;
}
const cals = [...others.map((d) => ({ name: commitOf(d), dir: d })), { name: `${commitOf(root)} (this cal)`, dir: root }];
const KINDS = [
  { kind: 'live Claude Code pane', provider: 'claude-code', extra: [], bare: 'claude' },
  { kind: 'structured Claude Code', provider: 'claude-code', extra: ['--transport', 'structured'], bare: 'claude' },
  { kind: 'structured Codex', provider: 'codex', extra: ['--transport', 'structured'], bare: 'codex' },
];

const { startModelServer } = await import(path.join(root, 'dist', 'model', 'server.js'));
const { AgentSessions } = await import(path.join(root, 'dist', 'sessions', 'agent-sessions.js'));
const { tmuxSocketFor } = await import(path.join(root, 'dist', 'engine', 'tmux-socket.js'));
const server = await startModelServer({});
const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-bench-against-'));
const base = { ...withoutCaBundle(process.env), PATH: `${binDir}:${process.env.PATH}`, DISABLE_AUTOUPDATER: '1' };
const env = {
  'claude-code': await AgentSessions.scriptedModelEnv('claude-code', path.join(scratch, 'home-claude'), server.url, base),
  codex: await AgentSessions.scriptedModelEnv('codex', path.join(scratch, 'home-codex'), server.url, base),
};
const stateOf = (i) => path.join(scratch, `state-${i}`);
const calIn = (i, provider, args) => timed(process.execPath, [path.join(cals[i].dir, 'bin', 'cal.cjs'), '--state-dir', stateOf(i), ...args], { env: env[provider] });
const recalled = (run, what) => {
  must(run, what);
  if (!codeword(run, 'BENCH')) throw new Error(`${what} answered ${JSON.stringify(run.stdout.slice(0, 200))}`);
  return run.ms;
};

const times = new Map();
const push = (key, ms) => times.set(key, [...(times.get(key) ?? []), ms]);
try {
  const steps = [];
  for (const [i, cal] of cals.entries()) {
    for (const k of KINDS) {
      const cwd = path.join(scratch, `work-${i}-${k.kind.replace(/\W+/g, '-')}`);
      await fs.mkdir(cwd);
      const run = must(await calIn(i, k.provider, ['start', '--provider', k.provider, ...k.extra, '--cwd', cwd, 'Remember the codeword BENCH.']), `${cal.name} start (${k.kind})`);
      const handle = /handle: (\S+)/.exec(run.stderr)[1];
      steps.push([`${i}|${k.kind}`, async (m) => recalled(await calIn(i, k.provider, ['continue', handle, m]), `${cal.name} continue (${k.kind})`)]);
    }
  }
  const claudeCwd = path.join(scratch, 'bare-claude');
  const codexCwd = path.join(scratch, 'bare-codex');
  await fs.mkdir(claudeCwd);
  await fs.mkdir(codexCwd);
  const claudeId = randomUUID();
  must(await timed(path.join(binDir, 'claude'), ['-p', '--session-id', claudeId, 'Remember the codeword BENCH.'], { env: env['claude-code'], cwd: claudeCwd }), 'claude -p');
  const first = must(await timed(path.join(binDir, 'codex'), ['exec', '--json', '--skip-git-repo-check', 'Remember the codeword BENCH.'], { env: env.codex, cwd: codexCwd }), 'codex exec');
  const thread = /"thread_id":"([^"]+)"/.exec(first.stdout)[1];
  steps.push(['bare|claude', async (m) => recalled(await timed(path.join(binDir, 'claude'), ['-p', '--resume', claudeId, m], { env: env['claude-code'], cwd: claudeCwd }), 'claude -p --resume')]);
  steps.push(['bare|codex', async (m) => recalled(await timed(path.join(binDir, 'codex'), ['exec', 'resume', '--json', '--skip-git-repo-check', thread, m], { env: env.codex, cwd: codexCwd }), 'codex exec resume')]);

  await untilQuiet();
  for (let r = 0; r < RUNS; r++) {
    const message = `What was the codeword? (${r})`;
    for (let k = 0; k < steps.length; k++) {
      const [key, turn] = steps[(r + k) % steps.length];
      push(key, await turn(message));
    }
  }
} finally {
  for (const i of cals.keys()) spawnSync('tmux', ['-S', await tmuxSocketFor(path.join(stateOf(i), 'tmux')), 'kill-server']);
  await server.close();
  await fs.rm(scratch, { recursive: true, force: true }).catch(() => undefined);
}

const bare = { claude: median(times.get('bare|claude')), codex: median(times.get('bare|codex')) };
const lines = [
  '# Performance: this cal against other builds',
  '',
  'Written by `node bench/against.mjs <checkout> …` (bench/against.mjs); see [performance.md](performance.md).',
  '',
  `- run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${RUNS} rounds in rotating order, medians`,
  `- machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), node ${process.version}`,
  `- bare: \`claude -p --resume\` ${fmt(bare.claude)}, npm's \`codex exec resume --json\` ${fmt(bare.codex)}`,
  '',
  `| \`cal continue\` | ${cals.map((c) => c.name).join(' | ')} |`,
  `|---|${cals.map(() => '---').join('|')}|`,
];
for (const k of KINDS) {
  // By position: two checkouts of one commit are two columns, never one.
  const cells = cals.map((_, i) => {
    const ms = median(times.get(`${i}|${k.kind}`));
    return `${fmt(ms)}, ${(ms / bare[k.bare]).toFixed(2)}x`;
  });
  lines.push(`| ${k.kind} (vs ${k.bare === 'claude' ? '`claude -p --resume`' : "npm's `codex exec resume --json`"}) | ${cells.join(' | ')} |`);
}
const markdown = `${lines.join('\n')}\n`;
const out = process.env.BENCH_OUT ?? path.join(root, 'docs', 'performance-against.md');
await fs.writeFile(out, markdown);
console.log(markdown);
console.log(`wrote ${path.relative(process.cwd(), out)}`);
