import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeCodeVersions } from '../../src/adapters/claude-code/index.js';
import { codexVersions } from '../../src/adapters/codex/index.js';
import { geminiVersions } from '../../src/adapters/gemini/index.js';
import { piVersions } from '../../src/adapters/pi/index.js';
import { baseEnv, handleFromStderr, runCal, scratchDir } from '../support/cal.js';
import { matrixBin, matrixVersions, missingMatrix, type MatrixProvider } from '../support/cli-matrix.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Issue 16 acceptance through the built `cal`, with real binaries of the version matrix
 * (test/support/cli-matrix.json; .ci/run installs them into .tmp/clis/) against the scripted
 * model. The engine tails the signal file cal's Stop hook writes beside the transcript: releases
 * that write no `turn_duration` for a turn end on it. Run under `flock /tmp/cal-realcli.lock`.
 *
 * A release of the matrix that is not installed fails the run when CAL_REQUIRE_MATRIX=1 (CI),
 * else its tests are skipped and named.
 */
const TIMEOUT = ['--timeout', '90'];
/**
 * A tool call that takes 40 s. Not `sleep 40; echo …`: Claude Code 2.1.3xx refuses a long sleep
 * followed by a command ("Blocked: sleep 40 followed by: …, use Monitor").
 */
const FORTY_SECOND_TOOL = `Wait for it [[cal:shell=node -e "setTimeout(() => console.log('slept-forty'), 40000)"]]`;
const oldestAndNewest = (p: MatrixProvider) => [matrixVersions(p)[0]!, matrixVersions(p).at(-1)!];

function requireMatrix(provider: MatrixProvider): void {
  const missing = missingMatrix(provider);
  if (missing.length && process.env.CAL_REQUIRE_MATRIX === '1') {
    throw new Error(`${provider} ${missing.join(', ')} of the version matrix are not installed: run scripts/install-cli-matrix.mjs`);
  }
}

const installed = (p: MatrixProvider, v: string) => !missingMatrix(p).includes(v);

describe('the version matrix matches what the adapters declare', () => {
  it('the oldest release certified is the floor, the newest is the newest certified', () => {
    expect(matrixVersions('claude-code')[0]).toBe(claudeCodeVersions.floor);
    expect(matrixVersions('claude-code').at(-1)).toBe(claudeCodeVersions.certified);
    expect(matrixVersions('codex')[0]).toBe(codexVersions.floor);
    expect(matrixVersions('codex').at(-1)).toBe(codexVersions.certified);
    expect(matrixVersions('gemini')[0]).toBe(geminiVersions.floor);
    expect(matrixVersions('gemini').at(-1)).toBe(geminiVersions.certified);
    expect(matrixVersions('pi')[0]).toBe(piVersions.floor);
    expect(matrixVersions('pi').at(-1)).toBe(piVersions.certified);
    requireMatrix('claude-code');
    requireMatrix('codex');
    requireMatrix('gemini');
    requireMatrix('pi');
  });
});

describe('a release below the floor', () => {
  let root: string;
  beforeAll(async () => {
    root = await scratchDir('below-floor');
  });
  afterAll(async () => {
    await removeScratch(root);
  });

  it('fails with cli_unsupported (16) in under 2 s, naming the version and the floor, before any handle or turn exists', async () => {
    const fake = path.join(root, 'claude');
    await fs.writeFile(fake, '#!/bin/sh\necho "1.0.128 (Claude Code)"\n', { mode: 0o755 });
    const state = path.join(root, 'state');
    const env = baseEnv({ HOME: path.join(root, 'home') });
    const t0 = Date.now();
    const run = await runCal(['--state-dir', state, 'start', '--provider', 'claude-code', '--cli-path', fake, '--json', 'hello'], { env });
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(run.code).toBe(16);
    expect(run.json.error).toMatchObject({ kind: 'cli_unsupported', actual: '1.0.128', expected: `>=${claudeCodeVersions.floor}` });
    expect(run.json.error.message).toContain('1.0.128');
    expect(run.json.error.message).toContain(claudeCodeVersions.floor);
    const plain = await runCal(['--state-dir', state, 'start', '--provider', 'claude-code', '--cli-path', fake, 'hello'], { env });
    expect(plain.code).toBe(16);
    expect(plain.stderr).toMatch(/^cal: cli_unsupported: Claude Code 1\.0\.128 .* older than /m);
    const list = await runCal(['--state-dir', state, 'inspect', '--json'], { env });
    expect(JSON.stringify(list.json)).not.toContain('claude-code');
  });

  it('Gemini CLI 0.40.0 (no --session-id) is cli_unsupported (16) naming the floor, on either transport, before any handle exists', async () => {
    const fake = path.join(root, 'gemini');
    await fs.writeFile(fake, '#!/bin/sh\necho "0.40.0"\n', { mode: 0o755 });
    const state = path.join(root, 'state-gemini');
    const env = baseEnv({ HOME: path.join(root, 'home') });
    for (const transport of ['tmux', 'structured']) {
      const run = await runCal(['--state-dir', state, 'start', '--provider', 'gemini', '--transport', transport, '--cli-path', fake, '--json', 'hello'], { env });
      expect(run.code, run.stdout).toBe(16);
      expect(run.json.error).toMatchObject({ kind: 'cli_unsupported', actual: '0.40.0', expected: `>=${geminiVersions.floor}` });
    }
    const list = await runCal(['--state-dir', state, 'inspect', '--json'], { env });
    expect(JSON.stringify(list.json)).not.toContain('gemini');
  });
});

/**
 * The user's own settings: Bash runs without asking, in accept-edits mode (auto mode, the default
 * of 2.1.3xx, wants a server-side check the scripted model does not give).
 */
function userSettings(hooks?: unknown): Record<string, unknown> {
  return { skipDangerousModePermissionPrompt: true, permissions: { defaultMode: 'acceptEdits', allow: ['Bash'] }, ...(hooks ? { hooks } : {}) };
}

async function claudeSuite(version: string, hooks?: unknown): Promise<CliSuite> {
  const s = await cliSuite('claude-code', { prefix: `claude-${version}` });
  await fs.mkdir(s.configDir, { recursive: true });
  await fs.writeFile(path.join(s.configDir, 'settings.json'), JSON.stringify(userSettings(hooks)));
  return s;
}

/** start → paste → kill-tmux → native resume → recall, through cal. */
async function loop(s: CliSuite, provider: string, cliPath: string): Promise<void> {
  const start = await s.cal(['start', '--provider', provider, '--cli-path', cliPath, '--cwd', s.work, ...TIMEOUT, 'Remember the codeword MANGO.']);
  expect(start.stderr).toMatch(/^handle: /m);
  expect(start.code, start.stderr).toBe(0);
  expect(start.stdout.trim()).toBe('OK, I will remember the codeword MANGO.');
  const handle = handleFromStderr(start.stderr)!;

  const paste = await s.cal(['continue', handle, ...TIMEOUT, '--json', '--events', 'What was the codeword?']);
  expect(paste.code, paste.stderr).toBe(0);
  expect(paste.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was MANGO.' });

  expect((await s.cal(['kill-tmux', handle])).code).toBe(0);
  s.server.clearLog();
  const resume = await s.cal(['continue', handle, ...TIMEOUT, '--json', '--events', 'What was the codeword, again?']);
  expect(resume.code, resume.stderr).toBe(0);
  expect(resume.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was MANGO.' });
  const events = resume.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l).event);
  expect(events).toEqual(expect.arrayContaining(['lost_tmux', 'resuming', 'completed']));
  // Native resume: the model saw the earlier turns once each, and only the one new message.
  const turn = s.server.turnRequests().filter((r) => r.lastUserMessage === 'What was the codeword, again?');
  expect(turn.length).toBeGreaterThan(0);
  expect(turn[0]!.userMessages.filter((m) => m === 'What was the codeword, again?')).toHaveLength(1);
}

describe.each(oldestAndNewest('claude-code'))('Claude Code %s through cal', (version) => {
  const skip = !installed('claude-code', version);
  let s: CliSuite;
  beforeAll(async () => {
    if (!skip) s = await claudeSuite(version);
  });
  afterAll(async () => {
    await s?.close();
  });

  it.skipIf(skip)('start → paste → kill-tmux → native resume → recall', async () => {
    await loop(s, 'claude-code', matrixBin('claude-code', version));
  }, 300_000);
});

describe.each(oldestAndNewest('codex'))('Codex %s through cal', (version) => {
  const skip = !installed('codex', version);
  let s: CliSuite;
  beforeAll(async () => {
    if (!skip) s = await cliSuite('codex', { prefix: `codex-${version}` });
  });
  afterAll(async () => {
    await s?.close();
  });

  it.skipIf(skip)('start → paste → kill-tmux → native resume → recall', async () => {
    await loop(s, 'codex', matrixBin('codex', version));
  }, 300_000);
});

// Gemini and Pi: the tmux loop on every matrix release, and the structured transport (one CLI
// process per turn, resumed natively) on the oldest.
const nodeClis = [
  ['gemini', 'Gemini CLI'],
  ['pi', 'Pi'],
] as const;
describe.each(nodeClis.flatMap(([provider, name]) => matrixVersions(provider).map((version) => [name, version, provider] as const)))('%s %s through cal', (_name, version, provider) => {
  const skip = !installed(provider, version);
  let s: CliSuite;
  beforeAll(async () => {
    if (!skip) s = await cliSuite(provider, { prefix: `${provider}-${version}` });
  });
  afterAll(async () => {
    await s?.close();
  });

  it.skipIf(skip)('start → paste → kill-tmux → native resume → recall', async () => {
    await loop(s, provider, matrixBin(provider, version));
  }, 300_000);

  // Defined for the oldest release only: the pinned one has its own structured suite.
  if (version !== matrixVersions(provider)[0]) return;
  it.skipIf(skip)('structured: start → continue → recall, the model seeing each earlier turn once', async () => {
    const start = await s.cal(['start', '--provider', provider, '--transport', 'structured', '--cli-path', matrixBin(provider, version), '--cwd', s.work, ...TIMEOUT, 'Remember the codeword PAPAYA.']);
    expect(start.code, start.stderr).toBe(0);
    expect(start.stdout.trim()).toBe('OK, I will remember the codeword PAPAYA.');
    const handle = handleFromStderr(start.stderr)!;
    s.server.clearLog();
    const next = await s.cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was PAPAYA.' });
    const request = s.server.turnRequests().at(-1)!;
    expect(request.userMessages.filter((m) => m.includes('Remember the codeword PAPAYA.'))).toHaveLength(1);
    expect(request.userMessages.filter((m) => m === 'What was the codeword?')).toHaveLength(1);
  }, 300_000);
});

describe.each(matrixVersions('claude-code'))('Claude Code %s: turns end when the CLI finishes', (version) => {
  const skip = !installed('claude-code', version);
  let s: CliSuite;
  let handle = '';
  beforeAll(async () => {
    if (skip) return;
    s = await claudeSuite(version);
    const start = await s.cal(['start', '--provider', 'claude-code', '--cli-path', matrixBin('claude-code', version), '--cwd', s.work, ...TIMEOUT, 'Remember the codeword FIG.']);
    expect(start.code, start.stderr).toBe(0);
    handle = handleFromStderr(start.stderr)!;
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  /**
   * How long after the CLI finished the turn cal returned: after the latest of the turn's final
   * answer record, the end records the CLI writes once its Stop hooks ran (`stop_hook_summary`,
   * `turn_duration`, or the hook notice of older releases) and the time cal's Stop hook ran (the
   * only end older releases give).
   */
  async function lag(returned: number): Promise<number> {
    const view = await s.inspect(handle);
    const lines = (await fs.readFile(view.provider.transcript.path, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const lastUser = lines.map((r, i) => (r.type === 'user' && typeof r.message?.content === 'string' ? i : -1)).reduce((a, b) => Math.max(a, b), -1);
    const ends = lines
      .slice(lastUser + 1)
      .filter((r) => r.type === 'assistant' || (r.type === 'system' && ['stop_hook_summary', 'turn_duration', 'informational'].includes(r.subtype)))
      .map((r) => Date.parse(r.timestamp));
    const stops = (await fs.readFile(view.provider.signals.path, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const lastStop = stops.at(-1);
    if (lastStop && Date.parse(lastStop.cal_received_at) >= Math.min(...ends)) ends.push(Date.parse(lastStop.cal_received_at));
    const lagMs = returned - Math.max(...ends);
    console.info(`Claude Code ${version}: the turn ended ${lagMs} ms after the CLI finished it`);
    return lagMs;
  }

  it.skipIf(skip)('a 5-second turn ends within a second of the CLI finishing', async () => {
    const run = await s.cal(['continue', handle, ...TIMEOUT, '--json', '[[cal:delay=5000]] What was the codeword?']);
    const returned = Date.now();
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was FIG.' });
    expect(await lag(returned)).toBeLessThan(1000);
  }, 120_000);

  it.skipIf(skip)('a 40-second tool turn ends within a second of the CLI finishing', async () => {
    const run = await s.cal(['continue', handle, ...TIMEOUT, '--json', FORTY_SECOND_TOOL]);
    const returned = Date.now();
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'Tool finished: slept-forty' });
    expect(await lag(returned)).toBeLessThan(1000);
  }, 150_000);
});

describe.each(oldestAndNewest('claude-code'))('Claude Code %s: a prompt blocked by a UserPromptSubmit hook', (version) => {
  const skip = !installed('claude-code', version);
  let s: CliSuite;
  beforeAll(async () => {
    if (skip) return;
    // The user's own hook (in their settings, which cal never writes): it blocks any prompt naming BLOCKME.
    const hook = `${process.execPath} -e 'let d="";process.stdin.on("data",c=>d+=c).on("end",()=>{if(d.includes("BLOCKME")){process.stderr.write("no BLOCKME here");process.exit(2)}})'`;
    s = await claudeSuite(version, { UserPromptSubmit: [{ hooks: [{ type: 'command', command: hook }] }] });
  });
  afterAll(async () => {
    await s?.close();
  });

  it.skipIf(skip)('is turn_failed (10) with the hook\'s text, and the session goes on', async () => {
    const start = await s.cal(['start', '--provider', 'claude-code', '--cli-path', matrixBin('claude-code', version), '--cwd', s.work, ...TIMEOUT, 'Remember the codeword PEAR.']);
    expect(start.code, start.stderr).toBe(0);
    const handle = handleFromStderr(start.stderr)!;
    await s.cal(['kill-tmux', handle]);
    const blocked = await s.cal(['continue', handle, ...TIMEOUT, '--json', 'BLOCKME please']);
    expect(blocked.code, blocked.stderr).toBe(10);
    expect(blocked.json.turn.status).toBe('failed');
    expect(blocked.json.error.message).toContain('no BLOCKME here');
    expect(s.server.turnRequests().some((r) => (r.lastUserMessage ?? '').includes('BLOCKME'))).toBe(false);
  }, 300_000);
});

describe('a release newer than the newest certified', () => {
  // Built on the newest certified release of the matrix: skipped where it is not installed, like
  // every matrix test here (with CAL_REQUIRE_MATRIX=1, as in CI, the first describe fails the run).
  const skip = !installed('claude-code', claudeCodeVersions.certified);
  let s: CliSuite;
  beforeAll(async () => {
    if (!skip) s = await claudeSuite('newer');
  });
  afterAll(async () => {
    await s?.close();
  });

  it.skipIf(skip)('runs, says so once on stderr (and in --json), and inspect shows it uncertified', async () => {
    // The newest certified Claude Code behind a --version one release past it, as a release
    // published after the matrix was certified would look.
    const real = realpathSync(matrixBin('claude-code', claudeCodeVersions.certified));
    const newer = claudeCodeVersions.certified.replace(/\d+$/, (n) => String(Number(n) + 1));
    const wrapper = path.join(s.root, 'claude-newer');
    await fs.writeFile(
      wrapper,
      `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "${newer} (Claude Code)"; exit 0; fi\nexec ${JSON.stringify(real)} "$@"\n`,
      { mode: 0o755 },
    );
    const start = await s.cal(['start', '--provider', 'claude-code', '--cli-path', wrapper, '--cwd', s.work, ...TIMEOUT, '--json', 'Remember the codeword PLUM.']);
    expect(start.code, start.stderr).toBe(0);
    expect(start.json.turn).toMatchObject({ status: 'completed', answer: 'OK, I will remember the codeword PLUM.' });
    expect(start.json.uncertifiedCli).toMatchObject({ version: newer, newestCertified: claudeCodeVersions.certified });
    const notes = start.stderr.split('\n').filter((l) => l.startsWith('cal: note: '));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain(`${newer} is newer than ${claudeCodeVersions.certified}`);

    const plain = await s.cal(['continue', start.json.handle, ...TIMEOUT, 'What was the codeword?']);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout.trim()).toBe('The codeword was PLUM.');
    expect(plain.stderr.split('\n').filter((l) => l.startsWith('cal: note: '))).toHaveLength(1);

    const view = await s.cal(['inspect', start.json.handle]);
    expect(view.stdout).toMatch(new RegExp(`CLI ${newer.replace(/\./g, '\\.')} \\(uncertified\\)`));
    expect(view.stdout).toMatch(/^certified {2}uncertified: /m);
    const json = await s.inspect(start.json.handle);
    expect(json.provider.cli).toMatchObject({ version: newer, support: 'newer_than_certified', newestCertified: claudeCodeVersions.certified });
    expect(json.uncertifiedCli).toContain('uncertified');
  }, 180_000);
});
