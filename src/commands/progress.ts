import type { CalEvent, ToolActivity, TurnProgress } from '../index.js';
import { colorEnabled, elapsed, oneLine, toolLine } from '../tui/format.js';
import { eventPrinter } from './event-printer.js';
import { forTerminal } from '../util/terminal-text.js';

/**
 * Live progress for long waits: a spinner with the lifecycle state and elapsed time on a
 * terminal, and `--stream` (the assistant's text and tool activity as the CLI records them).
 * Neither loads Ink: the spinner is ora, imported only when stderr is a terminal.
 */

/** What the spinner and the stream read of a running turn. */
export interface ProgressView {
  readonly observation: { readonly phase: string };
  readonly tools: readonly ToolActivity[];
  readonly partialAnswer: string;
}

export interface Progress {
  onEvent(event: CalEvent): void;
  onProgress(view: ProgressView): void;
  /** Sets the state shown (for waits that are not one turn, e.g. certify's "3 of 26 done"). */
  setState(state: string): void;
  /** Prints a line to stdout without tearing the spinner (cleared, printed, drawn again). */
  printLine(line: string): void;
  /** Prints a line to stderr, as printLine does to stdout. */
  printNote(line: string): void;
  /** Clears the spinner line (before the answer is printed). */
  stop(): void;
}

const silent: Progress = {
  onEvent() {},
  onProgress() {},
  setState() {},
  printLine(line) {
    process.stdout.write(`${line}\n`);
  },
  printNote(line) {
    process.stderr.write(`${line}\n`);
  },
  stop() {},
};

const stateLabels: Record<string, string> = {
  waiting_for_lock: 'waiting in line for the handle',
  lost_tmux: 'pane gone',
  resuming: 'resuming natively',
  retrying: 'the model failed: the CLI retries',
  running: 'running',
  sending: 'sending',
};

/** "attempt 2 of 10, HTTP 500, next in 1.2s" from a `retrying` event's detail. */
export function retryLabel(detail: Record<string, unknown>): string {
  const parts = [`attempt ${String(detail.attempt)}${typeof detail.maxRetries === 'number' ? ` of ${detail.maxRetries}` : ''}`];
  if (typeof detail.errorStatus === 'number') parts.push(`HTTP ${detail.errorStatus}`);
  if (typeof detail.delayMs === 'number') parts.push(`next in ${(detail.delayMs / 1000).toFixed(1)}s`);
  return parts.join(', ');
}

export interface ProgressOptions {
  json?: boolean | undefined;
  /** The state shown before the first lifecycle event ("starting", "sending"). */
  initial: string;
  stream?: NodeJS.WriteStream;
  env?: NodeJS.ProcessEnv;
}

/** Whether a spinner may draw: a terminal on stderr, not --json, not a dumb terminal. */
export function spinnerWanted(opts: Pick<ProgressOptions, 'json' | 'stream' | 'env'>): boolean {
  const stream = opts.stream ?? process.stderr;
  const env = opts.env ?? process.env;
  return !opts.json && stream.isTTY === true && env.TERM !== 'dumb';
}

/** A spinner on a terminal's stderr; silent (and ora never loaded) for scripts and --json. */
export async function createProgress(opts: ProgressOptions): Promise<Progress> {
  if (!spinnerWanted(opts)) return silent;
  const { default: ora } = await import('ora');
  const env = opts.env ?? process.env;
  const started = Date.now();
  let state = opts.initial;
  let detail = '';
  const text = () => `${state} · ${elapsed(Date.now() - started)}${detail ? ` · ${detail}` : ''}`;
  const spinner = ora({
    text: text(),
    stream: opts.stream ?? process.stderr,
    color: colorEnabled(env) ? 'cyan' : false,
    discardStdin: false,
    isEnabled: true,
  }).start();
  const timer = setInterval(() => {
    spinner.text = text();
  }, 1000);
  timer.unref();
  let stopped = false;
  return {
    onEvent(event) {
      if (stopped) return;
      state = stateLabels[event.event] ?? event.event;
      if (event.event === 'retrying') state = `${state} (${retryLabel(event.detail ?? {})})`;
      spinner.text = text();
    },
    onProgress(view) {
      if (stopped) return;
      if (view.observation.phase === 'running' && state !== 'running') state = 'running';
      const open = [...view.tools].reverse().find((t) => !t.status);
      detail = open ? `tool ${oneLine(open.name, 50)}` : '';
      spinner.text = text();
    },
    setState(next) {
      if (stopped) return;
      state = next;
      spinner.text = text();
    },
    printLine(line) {
      if (stopped) {
        process.stdout.write(`${line}\n`);
        return;
      }
      spinner.clear();
      process.stdout.write(`${line}\n`);
      spinner.render();
    },
    printNote(line) {
      if (!stopped) spinner.clear();
      process.stderr.write(`${line}\n`);
      if (!stopped) spinner.render();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      spinner.stop();
    },
  };
}

/** Where the stream writes (process streams by default; tests pass their own). */
export interface StreamSinks {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** On a terminal, without the control sequences it would obey (plain --stream only: --json goes to stdout as JSON). */
const processSinks: StreamSinks = {
  stdout: (t) => void process.stdout.write(forTerminal(t, process.stdout)),
  stderr: (t) => void process.stderr.write(forTerminal(t, process.stderr)),
};

/**
 * `--stream`: turns the observer's growing view of the current turn into output as it
 * arrives. With --json, NDJSON events on stdout ({"type":"text"}, {"type":"tool"}); without,
 * the text on stdout and one line per tool call on stderr. It only ever sees the observer the
 * engine hands it, which starts at the stored transcript offset and at our own message, so
 * nothing from an earlier turn can appear.
 */
export class TurnStream {
  private text = '';
  private lastBlock = '';
  private pendingLine = '';
  private announced = 0;
  private readonly finished = new Set<number>();

  constructor(
    private readonly json: boolean,
    private readonly sinks: StreamSinks = processSinks,
  ) {}

  update(view: ProgressView): void {
    if (view.observation.phase === 'waiting') return;
    // One read may bring several records; keep the CLI's usual order: results of calls already
    // shown, then text (a reply's text precedes its own tool calls), then new calls.
    const finish = (tool: ToolActivity, i: number) => {
      if (tool.status && !this.finished.has(i)) {
        this.finished.add(i);
        this.tool(tool, 'result');
      }
    };
    view.tools.slice(0, this.announced).forEach(finish);
    this.updateText(view.partialAnswer);
    view.tools.forEach((tool, i) => {
      if (i < this.announced) return;
      this.announced = i + 1;
      // A call first seen already finished is one line in plain output (its call and its end
      // would print the same line twice); JSON keeps both events, whose fields differ.
      if (!this.json && tool.status) this.finished.add(i);
      this.tool(tool, 'call');
      finish(tool, i);
    });
  }

  /**
   * The observer's text so far: either a growing text (print the new part) or the latest
   * whole block (Claude and Codex record one block per record: print it as a new block).
   * Plain output is line-oriented: each piece ends its line at once, so a spinner drawn on the
   * same terminal never overwrites a half-printed line.
   */
  private updateText(partial: string): void {
    if (!partial || partial === this.lastBlock) return;
    const growing = this.lastBlock !== '' && partial.startsWith(this.lastBlock);
    const piece = growing ? partial.slice(this.lastBlock.length) : partial;
    this.lastBlock = partial;
    this.text += piece;
    if (this.json) {
      this.sinks.stdout(JSON.stringify({ type: 'text', text: piece }) + '\n');
      return;
    }
    // Token deltas split words: plain output prints whole lines only, the rest once its line
    // ends, a new block starts, or the turn ends (flush).
    if (!growing) this.flush();
    this.pendingLine += piece;
    const cut = this.pendingLine.lastIndexOf('\n');
    if (cut === -1) return;
    this.sinks.stdout(this.pendingLine.slice(0, cut + 1));
    this.pendingLine = this.pendingLine.slice(cut + 1);
  }

  /** Prints the text still waiting for its line to end (plain output). */
  flush(): void {
    if (!this.pendingLine) return;
    this.sinks.stdout(`${this.pendingLine}\n`);
    this.pendingLine = '';
  }

  private tool(tool: ToolActivity, phase: 'call' | 'result'): void {
    if (this.json) {
      const event: Record<string, unknown> = { type: 'tool', phase, kind: tool.kind, name: tool.name };
      if (tool.server) event.server = tool.server;
      if (phase === 'call' && tool.input !== undefined) event.input = tool.input;
      if (phase === 'result') {
        event.status = tool.status;
        if (tool.output !== undefined) event.output = tool.output;
      }
      this.sinks.stdout(JSON.stringify(event) + '\n');
    } else {
      this.sinks.stderr(`tool: ${toolLine(tool, 200)}\n`);
    }
  }

  /** Whether the final answer was already printed as streamed text. */
  covers(answer: string | null): boolean {
    return answer !== null && answer !== '' && (this.lastBlock === answer || this.text.endsWith(answer));
  }
}

export interface LiveOptions {
  json?: boolean | undefined;
  events?: boolean | undefined;
  stream?: boolean | undefined;
}

/** Everything a waiting command shows while the turn runs: spinner, --events, --stream. */
export interface LiveOutput {
  onEvent(event: CalEvent): void;
  onProgress(progress: TurnProgress): void;
  /**
   * Stops the spinner and returns the turn as it should be rendered: with --stream in plain
   * mode the answer was printed as it came, so it is not printed twice.
   */
  done<T extends { answer: string | null }>(turn: T): T;
  stop(): void;
}

/** The one line a cleared draft gets on stderr (issue 52): it happened, and where its text is. */
export function draftClearedNote(event: CalEvent): string {
  return `cal: note: a draft in the pane's input box was cleared before cal's message; its text is kept: cal events ${event.handle}`;
}

export async function liveOutput(opts: LiveOptions, initial: string, sinks?: StreamSinks): Promise<LiveOutput> {
  const progress = await createProgress({ json: opts.json, initial });
  const stream = opts.stream ? new TurnStream(Boolean(opts.json), sinks) : null;
  const printEvent = eventPrinter(opts);
  return {
    onEvent(event) {
      progress.onEvent(event);
      printEvent?.(event);
      if (event.event === 'draft_cleared' && !printEvent) progress.printNote(draftClearedNote(event));
    },
    onProgress({ phase, tools, partialAnswer }) {
      const view: ProgressView = { observation: { phase }, tools, partialAnswer };
      progress.onProgress(view);
      stream?.update(view);
    },
    done(turn) {
      progress.stop();
      stream?.flush();
      if (!stream || opts.json) return turn;
      return stream.covers(turn.answer) ? { ...turn, answer: null } : turn;
    },
    stop() {
      progress.stop();
      stream?.flush();
    },
  };
}
