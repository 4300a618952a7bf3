/**
 * Directives: `[[cal:NAME]]` or `[[cal:NAME=VALUE]]` tokens inside a user message that script the
 * scripted model's behaviour (see docs/scripted-model.md).
 *
 * A VALUE runs up to the first `]]`, except for `mcp=`, whose JSON argument object is scanned with
 * brace matching so that it may itself contain `]]`.
 */

export type Directive =
  | { kind: 'http'; status: number }
  | { kind: 'delay'; ms: number }
  | { kind: 'chunk-delay'; ms: number }
  | { kind: 'chunks'; n: number }
  | { kind: 'break' }
  | { kind: 'fail' }
  | { kind: 'retryable' }
  | { kind: 'shell'; command: string }
  | { kind: 'mcp'; server: string; tool: string; args: Record<string, unknown> }
  | { kind: 'echo' }
  | { kind: 'reply'; text: string }
  | { kind: 'lines'; n: number }
  | { kind: 'invalid'; raw: string; reason: string };

export interface ParsedDirectives {
  /** Parsed directives, in order of appearance. */
  directives: Directive[];
  /** The raw directive bodies (the text between `[[cal:` and `]]`), in order. */
  raw: string[];
  /** The message with every directive token removed, then trimmed. */
  stripped: string;
}

const OPEN = '[[cal:';
const CLOSE = ']]';

/** Upper bounds that keep a typo from stalling a test run or exhausting memory. */
export const DIRECTIVE_LIMITS = {
  maxDelayMs: 600_000,
  maxChunks: 10_000,
  maxLines: 100_000,
} as const;

function intValue(raw: string, value: string | undefined, min: number, max: number): number | string {
  if (value === undefined || !/^\d+$/.test(value.trim())) return `expected a whole number in "${raw}"`;
  const n = Number(value.trim());
  if (n < min || n > max) return `value out of range ${min}..${max} in "${raw}"`;
  return n;
}

/** Decode the escapes allowed in `reply=`: `\n` newline, `\t` tab, `\\` backslash. */
export function decodeReplyText(value: string): string {
  return value.replace(/\\(n|t|\\)/g, (_m, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : '\\'));
}

/** Scan a JSON object starting at `start` (which must be `{`); returns the index after its closing brace, or -1. */
function scanJsonObject(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

function parseOne(name: string, value: string | undefined, raw: string): Directive {
  switch (name) {
    case 'http': {
      const n = intValue(raw, value, 400, 599);
      return typeof n === 'number' ? { kind: 'http', status: n } : { kind: 'invalid', raw, reason: n };
    }
    case 'delay':
    case 'chunk-delay': {
      const n = intValue(raw, value, 0, DIRECTIVE_LIMITS.maxDelayMs);
      if (typeof n !== 'number') return { kind: 'invalid', raw, reason: n };
      return name === 'delay' ? { kind: 'delay', ms: n } : { kind: 'chunk-delay', ms: n };
    }
    case 'chunks': {
      const n = intValue(raw, value, 1, DIRECTIVE_LIMITS.maxChunks);
      return typeof n === 'number' ? { kind: 'chunks', n } : { kind: 'invalid', raw, reason: n };
    }
    case 'lines': {
      const n = intValue(raw, value, 1, DIRECTIVE_LIMITS.maxLines);
      return typeof n === 'number' ? { kind: 'lines', n } : { kind: 'invalid', raw, reason: n };
    }
    case 'break':
    case 'fail':
    case 'echo':
    case 'retryable':
      if (value !== undefined) return { kind: 'invalid', raw, reason: `"${name}" takes no value` };
      return { kind: name };
    case 'shell':
      if (value === undefined || value.trim() === '') return { kind: 'invalid', raw, reason: 'shell needs a command' };
      return { kind: 'shell', command: value.trim() };
    case 'reply':
      if (value === undefined) return { kind: 'invalid', raw, reason: 'reply needs a text' };
      return { kind: 'reply', text: decodeReplyText(value) };
    case 'mcp': {
      const m = value === undefined ? null : /^\s*([A-Za-z0-9_-]+)\.([A-Za-z0-9_.-]+)\s*([\s\S]*)$/.exec(value);
      if (!m) return { kind: 'invalid', raw, reason: 'mcp needs SERVER.TOOL and an optional JSON object' };
      const argText = (m[3] ?? '').trim();
      let args: Record<string, unknown> = {};
      if (argText !== '') {
        try {
          const parsed: unknown = JSON.parse(argText);
          if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
          args = parsed as Record<string, unknown>;
        } catch {
          return { kind: 'invalid', raw, reason: 'mcp arguments must be a JSON object' };
        }
      }
      return { kind: 'mcp', server: m[1] ?? '', tool: m[2] ?? '', args };
    }
    default:
      return { kind: 'invalid', raw, reason: `unknown directive "${name}"` };
  }
}

/** Find and parse every `[[cal:…]]` token in `text`. */
export function parseDirectives(text: string): ParsedDirectives {
  const directives: Directive[] = [];
  const raw: string[] = [];
  let out = '';
  let pos = 0;
  for (;;) {
    const open = text.indexOf(OPEN, pos);
    if (open < 0) break;
    const bodyStart = open + OPEN.length;
    const nameMatch = /^[a-z][a-z-]*/.exec(text.slice(bodyStart, bodyStart + 40));
    if (!nameMatch) {
      out += text.slice(pos, bodyStart);
      pos = bodyStart;
      continue;
    }
    const name = nameMatch[0];
    let cursor = bodyStart + name.length;
    let value: string | undefined;
    let end: number;
    if (text[cursor] === '=') {
      cursor++;
      let valueEnd = -1;
      if (name === 'mcp') {
        const brace = text.indexOf('{', cursor);
        const close = text.indexOf(CLOSE, cursor);
        if (brace >= 0 && (close < 0 || brace < close)) {
          const after = scanJsonObject(text, brace);
          if (after > 0 && text.startsWith(CLOSE, after)) valueEnd = after;
          else if (after > 0) {
            const ws = /^\s*/.exec(text.slice(after))?.[0].length ?? 0;
            if (text.startsWith(CLOSE, after + ws)) valueEnd = after + ws;
          }
        }
      }
      if (valueEnd < 0) valueEnd = text.indexOf(CLOSE, cursor);
      if (valueEnd < 0) {
        out += text.slice(pos, bodyStart);
        pos = bodyStart;
        continue;
      }
      value = text.slice(cursor, valueEnd);
      end = valueEnd + CLOSE.length;
    } else if (text.startsWith(CLOSE, cursor)) {
      end = cursor + CLOSE.length;
    } else {
      out += text.slice(pos, bodyStart);
      pos = bodyStart;
      continue;
    }
    const body = text.slice(bodyStart, end - CLOSE.length);
    raw.push(body);
    directives.push(parseOne(name, value, body));
    out += text.slice(pos, open);
    pos = end;
  }
  out += text.slice(pos);
  return { directives, raw, stripped: out.trim() };
}
