import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * Deliberately broken wrappers of a REAL CLI binary, for proving that certifications fail when
 * a CLI breaks the contract. Each wrapper is a node script (the file itself, not a symlink: cal
 * pins the real path of --cli-path and runs it directly) that answers --version with the real
 * version and otherwise execs the real binary, except that:
 *
 * - `drop-resume`: it drops the resume flag and its id, so every resume starts a fresh session;
 * - `replay`: it keeps the resume but sends every earlier launch message again in front of the
 *   new one (a CLI that replays the whole history as new input);
 * - `exit-mid-turn`: it kills the CLI as soon as the CLI runs a `sleep` of 5 s or more (a slow
 *   tool call), so the CLI exits in the middle of a turn. A shorter one is the second a shell
 *   probe keeps its shell open after its command (shellProbe), not a slow tool.
 */
export type BrokenMode = 'drop-resume' | 'replay' | 'exit-mid-turn';

export async function brokenWrapper(dir: string, name: string, realBinary: string, mode: BrokenMode): Promise<string> {
  await fs.mkdir(dir, { recursive: true });
  const file = path.join(dir, name);
  const script = `#!${process.execPath}
// cal certify test wrapper (${mode}) of ${realBinary}
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const crypto = require('node:crypto');
const REAL = ${JSON.stringify(realpathSync(realBinary))};
const MODE = ${JSON.stringify(mode)};
const DIR = ${JSON.stringify(dir)};
let args = process.argv.slice(2);

if (args.includes('--version') && !args.includes('--')) {
  const r = spawnSync(REAL, args, { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

const dashdash = args.indexOf('--');
const before = dashdash === -1 ? args : args.slice(0, dashdash);
// Claude: --resume <id>; Codex TUI: resume <id> (before --); Codex exec: exec resume … -- <id> <msg>.
const claudeResume = before.indexOf('--resume');
const codexResume = before.indexOf('resume');
const resuming = claudeResume !== -1 || codexResume !== -1;

if (MODE === 'drop-resume' && resuming) {
  if (claudeResume !== -1) {
    args.splice(claudeResume, 2);
  } else if (before[codexResume + 1] !== undefined && !before[codexResume + 1].startsWith('-')) {
    args.splice(codexResume, 2);
  } else {
    args.splice(codexResume, 1);
    const dd = args.indexOf('--');
    if (dd !== -1 && args.length - dd > 2) args.splice(dd + 1, 1);
  }
}

if (MODE === 'replay' && dashdash !== -1) {
  const key = crypto.createHash('sha256').update(process.cwd()).digest('hex').slice(0, 16);
  const file = DIR + '/history-' + key + '.json';
  let history = [];
  try { history = JSON.parse(fs.readFileSync(file, 'utf8')); } catch {}
  const message = args[args.length - 1];
  if (resuming && history.length > 0) args[args.length - 1] = [...history, message].join('\\n\\n');
  fs.writeFileSync(file, JSON.stringify([...history, message]));
}

const child = spawn(REAL, args, { stdio: 'inherit' });
for (const sig of ['SIGHUP', 'SIGTERM', 'SIGINT']) process.on(sig, () => { try { child.kill(sig); } catch {} });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

if (MODE === 'exit-mid-turn') {
  const descendants = (root) => {
    const parent = new Map();
    for (const e of fs.readdirSync('/proc')) {
      if (!/^\\d+$/.test(e)) continue;
      try {
        const stat = fs.readFileSync('/proc/' + e + '/stat', 'utf8');
        parent.set(Number(e), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      } catch {}
    }
    const out = [];
    const todo = [root];
    while (todo.length) {
      const p = todo.pop();
      for (const [pid, pp] of parent) if (pp === p) { out.push(pid); todo.push(pid); }
    }
    return out;
  };
  setInterval(() => {
    for (const pid of descendants(child.pid)) {
      let cmd = '';
      try { cmd = fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8'); } catch {}
      const [exe, seconds] = cmd.split('\\0');
      if (/(^|\\/)sleep$/.test(exe ?? '') && Number(seconds) >= 5) {
        try { process.kill(child.pid, 'SIGKILL'); } catch {}
        fs.appendFileSync(DIR + '/exited-mid-turn', String(Date.now()) + '\\n');
        process.exit(1);
      }
    }
  }, 100).unref();
}
`;
  await fs.writeFile(file, script, { mode: 0o755 });
  return file;
}
