import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRegisteredAdapters } from '../../src/adapters/registry.js';
import type { CliAdapter } from '../../src/adapters/types.js';

/**
 * Issue 50, the structured transport: no terminal, so no guard in the pane's sense, but the
 * message must still reach the CLI as its prompt text, never as flags or a command. Every
 * registered adapter with a structured transport runs a turn against a recording stand-in
 * executable (its argv and stdin written to files, then exit 3), and each hostile message must
 * be carried whole: on stdin (raw, or as the text of a stream-json user line), or in argv after
 * `--` or inside one `--flag=` argument, or as an argument that cannot be read as a flag. The
 * real CLIs' side of it: test/e2e/hostile-messages.test.ts (Copilot through `--transport structured`).
 */
const HOSTILE = ['-v --help', '--version', '/exit', ' /exit', '!touch /tmp/x', '@notes.txt', 'exit', '&x', '?', '#x', '$', '-- -p x'];

/** A --help that offers every flag the stand-in CLIs' adapters look for. */
const HELP = '-p, --print --output-format stream-json --resume --trust --workspace --conversation --add-dir --print-timeout --model --skip-permissions --dangerously-skip-permissions --plugin-dir --approve-mcps';

const root = mkdtempSync(path.join(os.tmpdir(), 'cal-structured-delivery-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function delivered(adapter: CliAdapter, message: string, n: number): Promise<{ argv: string[]; stdin: string }> {
  const dir = path.join(root, `${adapter.name}-${n}`);
  mkdirSync(dir);
  const exe = path.join(dir, 'cli');
  writeFileSync(exe, `#!/bin/sh\nif [ "$1" = "--help" ]; then echo '${HELP}'; exit 0; fi\nif [ "$1" = "create-chat" ]; then echo 0b0e5c2a-1f3e-4d5a-9b7c-2d4e6f8a0b1c; exit 0; fi\nfor a in "$@"; do printf '%s\\0' "$a"; done > "${dir}/argv"\ncat > "${dir}/stdin"\nexit 3\n`);
  chmodSync(exe, 0o755);
  await adapter.structured!.run({
    cli: { path: exe, realPath: exe, version: '99.0.0' } as never,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
    config: { cwd: dir, model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' },
    mode: 'fresh',
    sessionId: null,
    message,
    sessionDir: path.join(dir, 'session'),
    timeoutMs: 10_000,
  }).catch(() => null);
  expect(readdirSync(dir), `${adapter.name} ran nothing`).toContain('argv');
  return { argv: readFileSync(path.join(dir, 'argv'), 'utf8').split('\0').slice(0, -1), stdin: readFileSync(path.join(dir, 'stdin'), 'utf8') };
}

/** The text a stream-json stdin line carries as the user's message, if stdin is one. */
function streamJsonText(stdin: string): string | null {
  try {
    const line = JSON.parse(stdin.trim()) as { message?: { content?: unknown } };
    const content = line.message?.content;
    if (typeof content === 'string') return content;
    if (Array.isArray(content)) return content.map((b: { text?: string }) => b.text ?? '').join('');
  } catch {
    return null;
  }
  return null;
}

/** The message, or the message behind a guard the adapter documents (a space, a zero-width space). */
const sameText = (carried: string, message: string) => [message, ` ${message}`, `\u200b${message}`].includes(carried);

/**
 * Cline's structured transport is its ACP mode (docs/cline.md): the message travels in a JSON-RPC
 * `session/prompt` after `initialize`, which a stand-in that only records never answers, and never
 * in argv (`cline --acp` alone), like every `--transport acp` turn (not run here either).
 */
const ACP_STRUCTURED = ['cline'];
const structured = (await loadRegisteredAdapters()).filter((a) => a.structured && !ACP_STRUCTURED.includes(a.name));

describe('the structured transport carries a hostile message as text, for every adapter that has one (issue 50)', () => {
  for (const adapter of structured) {
    it(`${adapter.name}: on stdin, after "--", or in one argument no CLI reads as a flag`, async () => {
      let n = 0;
      for (const message of HOSTILE) {
        const { argv, stdin } = await delivered(adapter, message, n++);
        const label = `${adapter.name} ${JSON.stringify(message)}: argv ${JSON.stringify(argv)} stdin ${JSON.stringify(stdin)}`;
        if (stdin && (sameText(stdin, message) || sameText(streamJsonText(stdin) ?? '', message) || sameText(stdin + (argv.at(-1) ?? ''), message))) continue;
        const at = argv.findIndex((a) => sameText(a, message) || a.endsWith(`=${message}`));
        expect(at, label).toBeGreaterThanOrEqual(0);
        const arg = argv[at]!;
        const afterDashes = argv.slice(0, at).includes('--');
        const inFlag = /^--[\w-]+=/.test(arg) && !sameText(arg, message);
        // The value of the print flag of a Go CLI (agy): Go's flag package takes the argument
        // after a flag that needs a value as that value, whatever it starts with.
        const flagValue = adapter.name === 'agy' && argv[at - 1] === '-p';
        expect(afterDashes || inFlag || flagValue || !/^[-@]/.test(arg), label).toBe(true);
      }
    });
  }
});
