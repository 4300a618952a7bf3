import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRegisteredAdapters } from '../../src/adapters/registry.js';
import type { CliAdapter } from '../../src/adapters/types.js';
import { prepareMessage } from '../../src/engine/message.js';
import { CalError, exitCodes } from '../../src/errors.js';
import type { Transport } from '../../src/handles/schema.js';
import type { CalRun } from '../support/cal.js';
import { cliSuite, pinnedVersion, type CliSuite } from '../support/cli-suite.js';
import { recordFault } from '../support/fault-matrix.js';
import { cliMessage } from '../support/generated-messages.js';

/**
 * Issue 13's acceptance property against the real CLIs: generated messages (control bytes,
 * escape sequences, blanks and invisible characters, a leading / ! @ # -) go through cal into the
 * real Claude Code, Codex and Pi on each path a message takes: the launch argv (`cal start`, and
 * the resume launch after `kill-tmux`), the paste into a live pane (`cal continue`), and the
 * structured transport. For every message, either cal refused it with `usage` before anything
 * was sent, or the scripted model received it as text: one conversation turn whose user text is
 * the message after cal's documented rewrite (docs/security.md), no command run (no marker file,
 * the pane not ended).
 *
 * One session per CLI and path is reused for all its messages, so the file stays cheap. The seed
 * is fixed by default, so a CI run is reproducible and a red one names a real regression (a seed
 * that ever found a bug stays a fixed case); CAL_MESSAGE_SEED=random explores a fresh one,
 * CAL_MESSAGE_SEED=<n> replays a run. The seed is printed with every failure.
 */
const DEFAULT_SEED = 20261201;
const SEED =
  process.env.CAL_MESSAGE_SEED === 'random'
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(process.env.CAL_MESSAGE_SEED ?? DEFAULT_SEED);
const PASTE_RUNS = 8;
const LAUNCH_RUNS = 3;
const STRUCTURED_RUNS = 3;
const TIMEOUT = ['--timeout', '60'];

type Provider = 'claude-code' | 'codex' | 'pi';
const registered = new Map<string, CliAdapter>((await loadRegisteredAdapters()).map((a) => [a.name, a]));
const adapterOf = (provider: Provider): CliAdapter => registered.get(provider) as CliAdapter;
const PROVIDERS: Provider[] = ['claude-code', 'codex', 'pi'];

/**
 * The text as a person reads it: invisible characters dropped, every run of blanks one space,
 * trimmed. Claude Code rewrites exactly these when it takes a prompt (it strips zero-width and
 * format characters, turns tabs into spaces, a leading blank sometimes into LF, trims the end).
 */
const asRead = (s: string) => s.replace(/[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu, '').replace(/\s+/g, ' ').trim();

interface Case {
  nonce: string;
  message: string;
  marker: string;
}

/** Messages for one CLI and path, from the run's seed (each path its own stream). */
function cases(root: string, label: string, n: number, salt: number): Case[] {
  const out: Case[] = [];
  for (let i = 0; i < n; i++) {
    const nonce = `${label}${i}q${salt}`;
    const marker = path.join(root, `pwned-${nonce}`);
    const [message] = fc.sample(cliMessage(nonce, marker), { seed: SEED + salt * 1000 + i, numRuns: 1 });
    out.push({ nonce, message: message as string, marker });
  }
  return out;
}

/**
 * What the property found, kept as fixed cases. A message ending in a backslash (also one the
 * rewrite made, a C1 ST becoming `␛\`) was not submitted by Claude Code or Pi, whose input box
 * reads a backslash before Enter as a new line: cal waited for a turn that never started. A '/'
 * behind a pasted LF was a slash command to Codex ("Unrecognized command '/*exit'").
 */
function found(root: string): Case[] {
  const messages = (n: (i: number) => string) => [`dir ${n(0)} C:\\temp\\`, `ends ${n(1)} in ST\u009c`, `\r/*exit ${n(2)}\u001b7`, `\n!touch ${path.join(root, 'pwned-f3q')} ${n(3)}`];
  return messages((i) => `f${i}q`).map((message, i) => ({ nonce: `f${i}q`, message, marker: path.join(root, `pwned-f${i}q`) }));
}

/** cal's own verdict, as the pure function gives it: null when the message is sent. */
function expectedRefusal(provider: Provider, transport: Transport, message: string): string | null {
  if (message.includes('\u0000')) return 'NUL';
  try {
    prepareMessage(adapterOf(provider), transport, message);
    return null;
  } catch (err) {
    if (err instanceof CalError && err.kind === 'usage') return err.message;
    throw err;
  }
}

/** The three ways a message reaches a CLI. */
type Route = 'paste' | 'launch' | 'structured';

/**
 * What docs/security.md promises the model receives, and how exactly, given what cal types.
 * On a pane cal types the rewritten text with the adapter's guard (`prepareMessage(...).typed`).
 * Pasted, Codex and Pi send it trimmed at both ends, Pi as JavaScript trims (U+FEFF too), Codex as
 * Rust does (Unicode White_Space, keeping U+FEFF); in the launch argv they send it exactly
 * (measured). Claude Code sends it as it reads it on both (asRead). The structured transport
 * hands the message over exactly, with one guard in front of a leading '/' (a space for
 * `claude -p`, a zero-width space for Pi, both measured to keep it text); Codex's exec takes it
 * as it is.
 */
function promised(provider: Provider, route: Route, message: string): { text: string; same: (received: string) => boolean } {
  if (route !== 'structured') {
    const typed = prepareMessage(adapterOf(provider), 'tmux', message).typed;
    if (provider === 'claude-code') return { text: typed, same: (r) => asRead(r) === asRead(typed) };
    if (route === 'launch') return { text: typed, same: (r) => r === typed };
    const trimmed = provider === 'pi' ? typed.trim() : typed.replace(/^\p{White_Space}+|\p{White_Space}+$/gu, '');
    return { text: typed, same: (r) => r === trimmed };
  }
  const guard = message.startsWith('/') ? ({ 'claude-code': ' ', pi: '\u200b', codex: '' } as const)[provider] : '';
  return { text: guard + message, same: (r) => r === guard + message };
}

/** The handle a `--json` start printed (null when it failed before it made one). */
function handleOf(run: CalRun): string | null {
  const h = run.json?.handle;
  return typeof h === 'string' ? h : typeof h?.id === 'string' ? h.id : null;
}

interface Outcome {
  refused: number;
  delivered: number;
}

describe.each(PROVIDERS)('generated messages reach the real %s as text, or are refused with usage', (provider) => {
  let suite: CliSuite;
  const log: unknown[] = [];
  const passed = new Set<string>();

  beforeAll(async () => {
    suite = await cliSuite(provider, { prefix: `msgprop-${provider}` });
  });

  afterAll(async () => {
    if (passed.size === 3) {
      const bin = { 'claude-code': 'Claude Code', codex: 'Codex', pi: 'Pi' }[provider];
      recordFault({
        id: `input.generated-messages-${provider}`,
        area: 'input',
        fault: `generated messages (control bytes, escape sequences, blanks, invisible characters, a leading / ! @ # -, with exit, quit or touch after it) into ${bin}`,
        how: `${PASTE_RUNS} (and ${found('').length} it found before) pasted by \`cal continue\` into one live pane, ${LAUNCH_RUNS} in the launch argv (\`cal start\`, then \`kill-tmux\` and the resume launch), ${STRUCTURED_RUNS} through \`--transport structured\`; seeded, on stdin (real ${bin} ${pinnedVersion(provider)})`,
        outcome: "each message: exit 2 (usage) exactly where cal's rule refuses it, nothing reaching the model; otherwise exit 0 with the model's user text equal to the promised text (docs/security.md); no marker file created",
        state: 'the paste session keeps its one pane throughout; handles valid',
        test: 'test/security/message-properties-cli.test.ts',
      });
    }
    if (process.env.CAL_MESSAGE_LOG) await fs.appendFile(process.env.CAL_MESSAGE_LOG, log.map((l) => JSON.stringify(l)).join('\n') + '\n');
    await suite?.close();
  });

  /**
   * Sends one generated message with `send` (cal reads it from stdin: argv cannot carry a NUL)
   * and checks the property for it.
   */
  async function check(path_: string, route: Route, c: Case, send: (message: string) => Promise<CalRun>, outcome: Outcome): Promise<void> {
    const before = suite.server.requests().length;
    const run = await send(c.message);
    const received = suite.server
      .requests()
      .slice(before)
      .filter((r) => !r.side && r.lastUserMessage?.includes(c.nonce))
      .map((r) => r.lastUserMessage as string);
    const transport: Transport = route === 'structured' ? 'structured' : 'tmux';
    const refusal = expectedRefusal(provider, transport, c.message);
    const expected = refusal === null ? promised(provider, route, c.message) : null;
    const where = `seed ${SEED} (CAL_MESSAGE_SEED=${SEED} replays), ${provider} ${path_}, message ${JSON.stringify(c.message)}: exit ${run.code} ${run.stdout.slice(0, 400)} ${run.stderr.slice(-400)}; received ${JSON.stringify(received)}`;
    log.push({ provider, path: path_, message: c.message, code: run.code, promised: expected?.text ?? null, received });
    expect(existsSync(c.marker), `a shell ran the message: ${where}`).toBe(false);
    if (run.code === exitCodes.usage) {
      expect(run.json?.error?.kind, where).toBe('usage');
      expect(refusal, `refused though cal's rule sends it: ${where}`).not.toBeNull();
      expect(received, `refused, yet the model got it: ${where}`).toEqual([]);
      outcome.refused++;
      return;
    }
    expect(refusal, `sent though cal's rule refuses it (${refusal}): ${where}`).toBeNull();
    expect(run.code, where).toBe(0);
    expect(run.json.turn.answer, where).toMatch(/^Received: /);
    // The turn reached the model, and its user text is the promised text.
    expect(received.length, where).toBeGreaterThanOrEqual(1);
    for (const r of received) expect(expected!.same(r), `the model got other text than promised (${JSON.stringify(expected!.text)}): ${where}`).toBe(true);
    outcome.delivered++;
  }

  const start = async (transport: Transport, message: string, input?: string): Promise<CalRun> =>
    suite.cal(['start', '--provider', provider, '--transport', transport, '--cwd', suite.work, '--json', ...TIMEOUT, input === undefined ? message : '-'], input === undefined ? {} : { input });

  it('pasted into the live pane (cal continue)', { timeout: 150_000 }, async () => {
    const first = await start('tmux', 'Remember the codeword KIWI.');
    expect(first.code, first.stderr).toBe(0);
    const handle = handleOf(first) as string;
    const pane = (await suite.inspect(handle)).provider.tmux.paneId;
    const outcome: Outcome = { refused: 0, delivered: 0 };
    for (const c of [...cases(suite.root, 'p', PASTE_RUNS, 1), ...found(suite.root)]) {
      await check('paste', 'paste', c, (m) => suite.cal(['continue', handle, '--json', ...TIMEOUT, '-'], { input: m }), outcome);
    }
    // Nothing ended or replaced the pane (no /exit, /quit, no relaunch).
    const view = await suite.inspect(handle);
    expect(view.currentPaneAlive).toBe(true);
    expect(view.panes).toHaveLength(1);
    expect(view.provider.tmux.paneId).toBe(pane);
    expect(outcome.delivered, `seed ${SEED}`).toBeGreaterThan(0);
    passed.add('paste');
  });

  it('launched with the message in argv (cal start, and the resume launch after kill-tmux)', { timeout: 150_000 }, async () => {
    const outcome: Outcome = { refused: 0, delivered: 0 };
    let handle: string | null = null;
    for (const c of cases(suite.root, 'l', LAUNCH_RUNS, 2)) {
      if (handle === null) {
        await check('launch (start)', 'launch', c, async (m) => {
          const run = await start('tmux', '', m);
          handle = handleOf(run);
          return run;
        }, outcome);
        if (handle === null) continue;
      } else {
        const killed = await suite.cal(['kill-tmux', handle]);
        expect(killed.code, killed.stderr).toBe(0);
        await check('launch (resume)', 'launch', c, (m) => suite.cal(['continue', handle as string, '--json', ...TIMEOUT, '-'], { input: m }), outcome);
      }
    }
    if (handle) await suite.cal(['kill-tmux', handle]);
    passed.add('launch');
  });

  it('through the structured transport (no terminal: the text exactly)', { timeout: 150_000 }, async () => {
    const first = await start('structured', 'Remember the codeword PEAR.');
    expect(first.code, first.stderr).toBe(0);
    const handle = handleOf(first) as string;
    const outcome: Outcome = { refused: 0, delivered: 0 };
    for (const c of cases(suite.root, 's', STRUCTURED_RUNS, 3)) {
      await check('structured', 'structured', c, (m) => suite.cal(['continue', handle, '--json', ...TIMEOUT, '-'], { input: m }), outcome);
    }
    passed.add('structured');
  });
});
