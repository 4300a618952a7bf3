import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { LEADS, type MessageGuard } from '../../src/adapters/message-guard.js';
import { loadRegisteredAdapters } from '../../src/adapters/registry.js';
import type { CliAdapter, PaneCliAdapter } from '../../src/adapters/types.js';
import { prepareMessage } from '../../src/engine/message.js';
import { CalError } from '../../src/errors.js';

/**
 * Issue 50: the message guard is part of the adapter contract. Every registered adapter with a
 * pane (so a CLI registered tomorrow too) goes through the same hostile set, and each message
 * either becomes text whose first visible character that CLI reads as text (by the CLI's
 * declared rules, modelled here apart from the engine's code) or is refused with `usage`.
 * test/e2e/hostile-messages.test.ts holds the real CLIs to the same declarations.
 */
const adapters = await loadRegisteredAdapters();
const paneAdapters = adapters.filter((a): a is PaneCliAdapter => a.capabilities.tmuxContinuation);

/** What the CLIs may pass over before the first character they read. */
const BLANKS: Array<[string, string]> = [
  ['space', ' '],
  ['two spaces', '  '],
  ['tab', '\t'],
  ['LF', '\n'],
  ['CRLF', '\r\n'],
  ['U+00A0', '\u00a0'],
  ...Array.from({ length: 11 }, (_, i): [string, string] => [`U+${(0x2000 + i).toString(16).toUpperCase()}`, String.fromCharCode(0x2000 + i)]),
  ['U+2028', '\u2028'],
  ['U+202F', '\u202f'],
  ['U+205F', '\u205f'],
  ['U+3000', '\u3000'],
  ['U+FEFF', '\ufeff'],
  ['U+200B', '\u200b'],
  ['U+2060', '\u2060'],
  ['U+00AD', '\u00ad'],
  ['U+034F', '\u034f'],
  ['U+180E', '\u180e'],
  ['space and U+200B', ' \u200b'],
  ['U+200B and a tab', '\u200b\t'],
  ['ESC[0m', '\u001b[0m'],
  ['bracketed-paste end', '\u001b[201~'],
  ['8-bit CSI', '\u009b0m'],
  ['OSC title', '\u001b]0;t\u0007'],
];

/** Each first character with a body, alone and behind every blank. */
const hostile: string[] = [
  ...LEADS.flatMap((lead) => BLANKS.map(([, blank]) => `${blank}${lead}touch /tmp/x`)),
  ...LEADS.map((lead) => `${lead}touch /tmp/x`),
  ...LEADS.map((lead) => lead),
  ...['/exit', '/quit', '//comment', '/* c */', '!!', '@notes.txt', '#x', '?', '&x', '-v --help', '$', '$ ls'],
  // Whole words a CLI takes as commands, in any case and with blanks around.
  ...['exit', 'quit', 'EXIT', ' Quit ', 'exit print', 'help', '\thelp\n', '?', ' $ ', '\u00a0exit\u3000'],
  // Bracketed-paste end sequences and control characters before a command.
  'hello\u001b[201~\r!touch /tmp/x\r',
  'hello\u001b[201~\u0015!touch /tmp/x',
  '\u001b[200~/exit\u001b[201~',
  '\u0015/exit',
  '\u0003!touch /tmp/x',
  '\u0007/exit',
  '\u007f/exit',
  '\u0085/exit',
  'x\b\b/exit',
  // A 100 KB line, plain and behind a command character.
  'a'.repeat(100_000),
  `!${'a'.repeat(100_000)}`,
  ` /${'b'.repeat(100_000)}`,
];

/** tsc's errors for a snippet that sits beside this test (the project's compiler options). */
function typeErrors(source: string): string[] {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const file = path.join(here, '__guard_snippet__.ts');
  const configFile = path.join(here, '..', '..', 'tsconfig.json');
  const { config } = ts.readConfigFile(configFile, ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, path.dirname(configFile));
  const host = ts.createCompilerHost({ ...options, noEmit: true });
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => (name === file ? ts.createSourceFile(name, source, lang) : getSourceFile(name, lang, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], { ...options, noEmit: true, rootDir: undefined }, host);
  return ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

const PASSED_OVER: Record<MessageGuard['passesOver'], RegExp> = {
  blanks: /^[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*/,
  'blanks-and-invisible': /^[\s\p{Default_Ignorable_Code_Point}\p{Cf}]*/u,
};

/**
 * Whether the CLI, by its declared rules, takes what cal typed as a command: a space in front is
 * kept by a CLI whose rule for that character is 'space' (it reads the character only as the very
 * first one typed, or keeps one space before it); otherwise it looks past what it passes over.
 */
function runsAsCommand(guard: MessageGuard, typed: string): string | null {
  const visible = typed.replace(PASSED_OVER[guard.passesOver], '');
  const skipped = typed.length - visible.length;
  const word = visible.trimEnd().toLowerCase();
  if (guard.commandWords?.words.includes(word)) return `the command word "${word}"`;
  const lead = visible[0];
  const rule = (guard.leads as Record<string, (typeof guard.leads)[keyof typeof guard.leads]>)[lead ?? ''];
  if (!rule || rule.means === null || rule.action === 'keep') return null;
  if (rule.unlessFollowedBy?.includes(visible[1] ?? '\u0000')) return null;
  if (skipped > 0 && rule.readAt === 'start') return null;
  if (skipped > 0 && rule.action === 'space' && typed === ` ${visible}`) return null;
  return `"${lead}": ${rule.means}`;
}

function outcome(adapter: CliAdapter, message: string): { refused: true } | { refused: false; text: string; typed: string } {
  try {
    return { refused: false, ...prepareMessage(adapter, 'tmux', message) };
  } catch (err) {
    expect(err, JSON.stringify(message).slice(0, 80)).toBeInstanceOf(CalError);
    expect((err as CalError).kind).toBe('usage');
    return { refused: true };
  }
}

describe('the message guard is part of every pane adapter (issue 50)', () => {
  it('every registered adapter with a pane declares what its CLI does with each first character', () => {
    expect(paneAdapters.map((a) => a.name).sort()).toEqual(expect.arrayContaining(['claude-code', 'codex', 'copilot', 'gemini', 'opencode', 'pi', 'qwen']));
    for (const adapter of paneAdapters) {
      expect(Object.keys(adapter.messageGuard.leads).sort(), adapter.name).toEqual([...LEADS].sort());
      for (const rule of Object.values(adapter.messageGuard.leads)) {
        // A zero-width space is passed over by such a CLI: it cannot be the guard there.
        if (rule.means !== null && adapter.messageGuard.passesOver === 'blanks-and-invisible') expect(rule.action, adapter.name).not.toBe('zero-width-space');
      }
    }
  });

  it('a pane adapter without its declaration does not build (tsc on a snippet)', () => {
    const errors = (body: string) => typeErrors(`import type { CliAdapter, PaneCliAdapter } from '../../src/adapters/types.js';\ndeclare const pane: PaneCliAdapter;\n${body}\n`);
    expect(errors('export const guarded: CliAdapter = pane;')).toEqual([]);
    // Registered with its pane but without the declaration: the adapter does not type-check.
    expect(errors('const { messageGuard: _dropped, ...unguarded } = pane;\nexport const adapter: CliAdapter = unguarded;').join('\n')).toMatch(/tmuxContinuation|messageGuard/);
    // A declaration that leaves out one of the first characters does not either.
    expect(errors("export const adapter: CliAdapter = { ...pane, messageGuard: { passesOver: 'blanks', leads: { '/': { means: null } } } };").join('\n')).toMatch(/missing/);
  }, 60_000);

  for (const adapter of paneAdapters) {
    it(`${adapter.name}: every hostile message is text the CLI does not run, or is refused with usage`, () => {
      let refused = 0;
      for (const message of hostile) {
        const got = outcome(adapter, message);
        if (got.refused) {
          refused++;
          continue;
        }
        const label = `${adapter.name} ${JSON.stringify(message).slice(0, 60)} typed ${JSON.stringify(got.typed).slice(0, 60)}`;
        expect(runsAsCommand(adapter.messageGuard, got.typed), label).toBeNull();
        // Nothing but tab and LF among the controls reaches the pane.
        expect(got.typed, label).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
        // The guard only puts something in front: the words are the user's (a trailing space
        // keeps a final backslash from meaning "new line"; one at the end closes Cline's menus).
        const typed = got.typed.replace(/(\\) $/, '$1');
        const fronts = [got.text, ` ${got.text}`, `\u200b${got.text}`];
        expect(fronts.includes(typed) || (adapter.messageGuard.endsWithSpace === true && fronts.map((f) => `${f} `).includes(typed)), label).toBe(true);
      }
      // Not every message can be refused: a CLI's guard keeps most of them text.
      expect(refused, adapter.name).toBeLessThan(hostile.length / 2);
    });
  }

  it('the known holes of 91258d3 are closed: Copilot "!cmd" behind blanks, "/exit" in Copilot and OpenCode', () => {
    const byName = new Map(paneAdapters.map((a) => [a.name, a]));
    for (const m of ['!touch /tmp/x', ' !touch /tmp/x', '\t!touch /tmp/x', '\u00a0!touch /tmp/x', '/exit', ' /exit', 'exit', '&x', '$']) {
      const got = outcome(byName.get('copilot')!, m);
      if (!got.refused) expect(got.typed, m).toBe(`\u200b${got.text}`);
    }
    for (const m of ['/exit', ' /exit', '!touch /tmp/x', ' !touch /tmp/x']) {
      const got = outcome(byName.get('opencode')!, m);
      if (!got.refused) expect(runsAsCommand(byName.get('opencode')!.messageGuard, got.typed), m).toBeNull();
      if (!got.refused) expect(got.typed, m).not.toBe(got.text);
    }
  });
});

/** Every transport without a pane that the registered adapters have: its guard and how it is reached. */
const headless = adapters.flatMap((adapter) => [
  ...(adapter.structured ? [{ label: `${adapter.name} (structured)`, adapter, transport: 'structured' as const, guard: adapter.structured.messageGuard }] : []),
  ...(adapter.acp ? [{ label: `${adapter.name} (acp)`, adapter, transport: 'acp' as const, guard: adapter.acp.messageGuard }] : []),
]);

describe('the structured and ACP transports declare their guard too (a headless mode runs "/init" as well)', () => {
  it('every structured and ACP transport of every registered adapter declares each first character', () => {
    expect(headless.map((h) => h.label)).toEqual(expect.arrayContaining(['gemini (structured)', 'gemini (acp)', 'qwen (structured)', 'copilot (structured)', 'acp (acp)']));
    for (const { label, guard } of headless) expect(Object.keys(guard.leads).sort(), label).toEqual([...LEADS].sort());
  });

  it('a structured transport or an ACP launch without its declaration does not build (tsc on a snippet)', () => {
    const errors = (body: string) => typeErrors(`import type { AcpLaunch, StructuredTransport } from '../../src/adapters/types.js';\ndeclare const s: StructuredTransport;\ndeclare const a: AcpLaunch;\n${body}\n`);
    expect(errors('export const x: StructuredTransport = s;\nexport const y: AcpLaunch = a;')).toEqual([]);
    expect(errors('const { messageGuard: _d, ...t } = s;\nexport const x: StructuredTransport = t;').join('\n')).toMatch(/messageGuard/);
    expect(errors('const { messageGuard: _d, ...t } = a;\nexport const y: AcpLaunch = t;').join('\n')).toMatch(/messageGuard/);
  }, 60_000);

  for (const { label, adapter, transport, guard } of headless) {
    it(`${label}: every hostile message reaches the CLI whole, behind its guard, or is refused with usage`, () => {
      for (const message of hostile) {
        let typed: string;
        try {
          typed = prepareMessage(adapter, transport, message).typed;
        } catch (err) {
          expect((err as CalError).kind).toBe('usage');
          continue;
        }
        const what = `${label} ${JSON.stringify(message).slice(0, 60)} typed ${JSON.stringify(typed).slice(0, 60)}`;
        expect(runsAsCommand(guard, typed), what).toBeNull();
        // No terminal: the text is the user's, byte for byte, with at most the guard in front.
        expect([message, ` ${message}`, `\u200b${message}`], what).toContain(typed);
      }
    });
  }

  it('the holes measured on the structured transport are closed: Gemini "/init", Qwen "/clear", Copilot "/compact", any ACP agent "/x" and Gemini\'s "$"', () => {
    const of = (label: string) => headless.find((h) => h.label === label)!;
    const typed = (label: string, m: string) => prepareMessage(of(label).adapter, of(label).transport, m).typed;
    for (const [label, m] of [['gemini (structured)', '/init'], ['gemini (structured)', ' /model'], ['qwen (structured)', '/clear'], ['copilot (structured)', '/compact'], ['gemini (acp)', '/restore'], ['gemini (acp)', '$ ls'], ['acp (acp)', '/x'], ['qwen (acp)', '/clear']] as const) {
      expect(typed(label, m), `${label} ${m}`).toBe(`\u200b${m}`);
    }
    expect(typed('claude-code (structured)', '/compact')).toBe(' /compact');
    expect(typed('codex (structured)', '/status')).toBe('/status');
  });
});
