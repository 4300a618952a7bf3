import { CalError } from '../errors.js';
import type { PinnedCli } from '../handles/schema.js';
import { findExecutable, pinCli, readVersion } from './resolve.js';

/**
 * `--provider acp --acp-command "<command line>"`: any ACP agent by its command line. The line is
 * split into words as a shell would split plain words and quotes (`'…'`, `"…"`, `\`), but no
 * shell runs it: no variables, globs, pipes or redirections. Its first word is the executable,
 * found and pinned as `--cli-path` would be (a continue runs the same file, or fails), and the
 * rest are recorded on the handle with it (`cli.args`).
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && i + 1 < line.length && '"\\$`'.includes(line[i + 1] as string)) word += line[++i] as string;
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= '';
    } else if (c === '\\' && i + 1 < line.length) {
      word = (word ?? '') + (line[++i] as string);
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (quote) throw new CalError('usage', `--acp-command ${JSON.stringify(line)}: a quote (${quote}) is not closed`);
  if (word !== null) words.push(word);
  if (words.length === 0) throw new CalError('usage', '--acp-command is empty: give the ACP agent\'s command line, e.g. "gemini --acp"');
  return words;
}

/** The agent's executable pinned, with the rest of its command line (`cli.args`). */
export async function resolveAcpCommand(line: string, env: Record<string, string>): Promise<PinnedCli> {
  const [exe, ...args] = splitCommandLine(line);
  const found = findExecutable(exe as string, (exe as string).includes('/') ? exe : undefined, env);
  // An agent that prints no version still runs: its version is then unknown, its file still pinned.
  const pinned = await pinCli(found, env, (file, e) => readVersion(file, e).catch(() => 'unknown'));
  return { ...pinned, args };
}

/** The command line a handle runs, as words (for messages and comparisons). */
export function commandWords(cli: PinnedCli): string[] {
  return [cli.realPath, ...(cli.args ?? [])];
}

/**
 * A continue that names the agent's command line must name the one the handle runs (the same
 * executable file, the same arguments): another is stale_handle, never a switch of agent.
 */
export async function checkAcpCommand(cli: PinnedCli | null, line: string | undefined, env: Record<string, string>): Promise<void> {
  if (line === undefined) return;
  if (!cli?.args) throw new CalError('usage', '--acp-command applies to a --provider acp session only');
  const [exe, ...args] = splitCommandLine(line);
  let realPath: string;
  try {
    realPath = findExecutable(exe as string, (exe as string).includes('/') ? exe : undefined, env).realPath;
  } catch {
    realPath = exe as string;
  }
  const asked = [realPath, ...args];
  const recorded = commandWords(cli);
  if (asked.length !== recorded.length || asked.some((w, i) => w !== recorded[i])) {
    throw new CalError('stale_handle', `the session runs the ACP agent ${JSON.stringify(recorded.join(' '))}, not ${JSON.stringify(asked.join(' '))}: start a new session for another agent`, {
      field: 'acpCommand',
      expected: recorded.join(' '),
      actual: asked.join(' '),
    });
  }
}
