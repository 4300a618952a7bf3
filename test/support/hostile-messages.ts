import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRegisteredAdapters } from '../../src/adapters/registry.js';
import type { CalRun } from './cal.js';
import { cliSuite, pinnedName, type CliSuite, type SuiteProvider } from './cli-suite.js';
import { cliBin, pinnedCliOf } from './clis.js';

/**
 * Issue 50's shared hostile-message test: every registered pane CLI that is installed (the seven
 * pinned ones), in real tmux against the scripted model, on ONE session each. A message starting
 * with what the CLI would act on (`!cmd` alone and behind blanks, `/exit`, `/quit`, `@file`, `#`,
 * `?`, `&`, whole command words, a bracketed-paste end then `!cmd`, a 100 KB line) either reaches
 * the model as text or is refused with `usage` (exit 2) before anything is recorded; no marker
 * file is ever created and the CLI never leaves its pane: the session's last turn recalls the
 * codeword of its start, in the pane it started in. The declarations these hold the CLIs to are
 * the adapters' `messageGuard` (test/unit/message-guards.test.ts checks the engine applies them).
 */
const adapters = await loadRegisteredAdapters();
const registered = adapters.filter((a) => a.capabilities.tmuxContinuation).map((a) => a.name);
/** CAL_HOSTILE_CLIS=copilot,opencode narrows a local run to some CLIs (CI runs them all). */
const only = process.env.CAL_HOSTILE_CLIS?.split(',') ?? null;
const installed = registered.filter((name): name is SuiteProvider => {
  if (!Object.hasOwn(pinnedCliOf, name) || (only && !only.includes(name))) return false;
  try {
    return existsSync(cliBin(pinnedName[name as SuiteProvider]));
  } catch {
    return false;
  }
});

const TIMEOUT = ['--timeout', '90'];
/** What the model's log holds of a message: blanks squashed, the guard's zero-width space gone. */
const squash = (s: string) => s.replace(/[\u200b\u2060\ufeff]/g, '').replace(/\s+/g, ' ').trim();

/** The hostile messages of one session; MARK is replaced by a fresh marker file's path. */
const HOSTILE: string[] = [
  '!touch MARK',
  ' !touch MARK',
  '\t!touch MARK',
  '\u00a0!touch MARK',
  ' /exit',
  '/quit',
  '@notes.txt what does it say',
  '#x a note',
  '?',
  '&x delegate this',
  'exit',
  '$',
  ':q',
  'hello\u001b[201~\r!touch MARK\r',
  `${'a'.repeat(100_000)} end of the long line`,
];

/** The CLIs whose structured transport the test also runs: every one that has it. */
const STRUCTURED: string[] = adapters.filter((a) => a.structured).map((a) => a.name);
/** Headless modes run slash commands too (measured: Gemini's `-p` "/init" and "/model", Qwen's "/clear", Copilot's "/compact"). */
const STRUCTURED_HOSTILE = ['!touch MARK', ' /exit', '-v --help', 'exit', '&x delegate this', '$', '/init', '/clear', '/compact', '/model'];

/**
 * The CLIs whose starts cost the most (OpenCode about 7 s of CPU, Kilo 10-20 s: docs/kilo.md,
 * docs/opencode.md): each runs the set in a file of its own, so vitest spreads them over its
 * workers instead of one file holding minutes of them. Every other CLI, a new one included, is in
 * the part's main file.
 */
export const SLOW_STARTING = ['opencode', 'cline', 'kilo'] as const;

/**
 * One part of the shared test, in a file of its own (test/e2e/hostile-messages*.test.ts for the
 * panes, hostile-structured*.test.ts for the structured transport), so vitest runs them side by
 * side: each part starts its own session per CLI. `clis` names the slow-starting CLIs of this
 * file; without it the file takes every installed CLI not in SLOW_STARTING.
 */
export function hostileMessagesSuite(part: 'pane' | 'structured', clis?: readonly (typeof SLOW_STARTING)[number][]): void {
const ofThisFile = installed.filter((name) => (clis ? (clis as readonly string[]).includes(name) : !(SLOW_STARTING as readonly string[]).includes(name)));
describe.runIf(ofThisFile.length > 0)(`hostile messages into every installed CLI (issue 50): ${part}`, () => {
  it.runIf(!only && part === 'pane' && !clis)('covers every registered pane CLI that is installed', () => {
    expect(installed.length, `registered pane CLIs: ${registered.join(', ')}`).toBe(registered.filter((n) => Object.hasOwn(pinnedCliOf, n)).length);
    // Each slow-starting CLI is named by a pane file and a structured file of its own.
    const e2e = fileURLToPath(new URL('../e2e/', import.meta.url));
    const files = readdirSync(e2e).filter((f) => f.startsWith('hostile-'));
    for (const kind of ['messages', 'structured']) {
      const named = files.filter((f) => f.startsWith(`hostile-${kind}-`)).map((f) => readFileSync(path.join(e2e, f), 'utf8')).join('\n');
      for (const name of SLOW_STARTING) expect(named, `no hostile-${kind}-*.test.ts names ${name}`).toContain(`'${name}'`);
    }
  });

  for (const provider of ofThisFile) {
    describe(provider, () => {
      let suite: CliSuite;
      const markers: string[] = [];
      const mark = () => {
        const file = path.join(suite.work, `pwned-${markers.length}`);
        markers.push(file);
        return file;
      };
      const send = (args: string[], message: string): Promise<CalRun> => suite.cal([...args, '--json', ...TIMEOUT, '-'], { input: message });

      beforeAll(async () => {
        suite = await cliSuite(provider, { prefix: `hostile-${part}-${provider}` });
        writeFileSync(path.join(suite.work, 'notes.txt'), 'the notes file\n');
      });
      afterAll(async () => {
        await suite?.close();
      });

      /** The message reached the model as text (a new user message holding it), or was refused before anything was recorded. */
      async function expectTextOrRefused(run: CalRun, message: string, of: string | null, turnsBefore: number, requestsBefore: number): Promise<void> {
        const label = `${provider} ${JSON.stringify(message).slice(0, 50)}: ${run.stdout.slice(0, 300)} ${run.stderr.slice(0, 300)}`;
        if (run.code === 2) {
          expect(run.json?.error?.kind, label).toBe('usage');
          if (of) expect((await suite.inspect(of)).turns.length, label).toBe(turnsBefore);
          return;
        }
        expect(run.code, label).toBe(0);
        const sent = squash(message.replace(/\u001b\[201~/g, ''));
        // The user items this message added (a CLI may send it in parts: Gemini's @file include),
        // not the history every request repeats: what a request holds past the longest history an
        // earlier request of the same conversation sent. (Not "every text sent before": the pane
        // session and the structured one of a suite are sent the same words, in two conversations.)
        const requests = suite.server.turnRequests();
        const earlier = requests.slice(0, requestsBefore).map((r) => r.userMessages);
        const added = (messages: string[]) => messages.slice(Math.max(0, ...earlier.filter((h) => h.length <= messages.length && h.every((m, i) => messages[i] === m)).map((h) => h.length)));
        const seen = requests.slice(requestsBefore).flatMap((r) => added(r.userMessages).map(squash));
        expect(seen.some((m) => m.includes(sent)), `${label}\nmodel saw: ${seen.map((m) => m.slice(0, 80)).join(' | ')}`).toBe(true);
      }

      it.runIf(part === 'pane')('a hostile start, then each hostile message: text or usage, no command run, the pane never ends', async () => {
        const first = `!touch ${mark()} Remember the codeword KIWI.`;
        const start = await send(['start', '--provider', provider, '--cwd', suite.work], first);
        let handle: string = start.json?.handle ?? '';
        await expectTextOrRefused(start, first, null, 0, 0);
        if (start.code === 2) {
          // Refused at start (nothing recorded): the session starts with a plain message.
          const plain = await send(['start', '--provider', provider, '--cwd', suite.work], 'Remember the codeword KIWI.');
          expect(plain.code, plain.stderr).toBe(0);
          handle = plain.json?.handle ?? '';
        }
        const pane = (await suite.inspect(handle)).provider.tmux.paneId;
        for (const template of HOSTILE) {
          const message = template.replace('MARK', () => mark());
          const turnsBefore = (await suite.inspect(handle)).turns.length;
          const requestsBefore = suite.server.turnRequests().length;
          await expectTextOrRefused(await send(['continue', handle], message), message, handle, turnsBefore, requestsBefore);
        }
        const recall = await suite.cal(['continue', handle, ...TIMEOUT, 'What was the codeword?']);
        expect(recall.stdout.trim(), recall.stderr).toBe('The codeword was KIWI.');
        const view = await suite.inspect(handle);
        expect(view.currentPaneAlive).toBe(true);
        expect(view.provider.tmux.paneId, 'the CLI left its pane and cal resumed it in another').toBe(pane);
        for (const file of markers) expect(existsSync(file), `${provider} ran a shell command: ${file}`).toBe(false);
      }, 600_000);

      it.runIf(part === 'structured' && STRUCTURED.includes(provider))('through --transport structured, the same messages and slash commands reach the model as text', async () => {
        const ownMarkers = markers.length;
        const first = `!touch ${mark()} Remember the codeword PLUM.`;
        const start = await send(['start', '--provider', provider, '--transport', 'structured', '--cwd', suite.work], first);
        await expectTextOrRefused(start, first, null, 0, 0);
        const structuredHandle = start.json?.handle ?? '';
        for (const template of STRUCTURED_HOSTILE) {
          const message = template.replace('MARK', () => mark());
          const requestsBefore = suite.server.turnRequests().length;
          const run = await send(['continue', structuredHandle], message);
          expect(run.code, `${provider} structured ${JSON.stringify(message)}: ${run.stdout.slice(0, 300)}`).toBe(0);
          await expectTextOrRefused(run, message, null, 0, requestsBefore);
        }
        const recall = await suite.cal(['continue', structuredHandle, ...TIMEOUT, 'What was the codeword?']);
        expect(recall.stdout.trim(), recall.stderr).toBe('The codeword was PLUM.');
        for (const file of markers.slice(ownMarkers)) expect(existsSync(file), `${provider} ran a shell command: ${file}`).toBe(false);
      }, 600_000);
    });
  }
});
}
