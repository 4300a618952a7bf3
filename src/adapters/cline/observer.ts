import type { ToolActivity } from '../../handles/tool-activity.js';
import { TranscriptTurnObserver } from '../turn-observer.js';
import { unwrapJsonResult } from '../../util/json-tool-result.js';
import { MirrorRecord, promptText, textOf, type ClineMessage } from './store.js';

/**
 * A turn in the mirror of a Cline session (store.ts). The turn is ours from the prompt message
 * holding our text; it ends once the manifest says `idle` (Cline's end of a TUI turn) and the
 * conversation's last message is the assistant's without a tool call pending: the answer is that
 * message's text. Cline writes the conversation without waiting for it, so an `idle` whose last
 * message is not yet there waits up to IDLE_GRACE_MS for it. A model error is recorded as an
 * assistant message marked `displayRole: "error"` (the turn failed, in Cline's words); an
 * interrupted turn (Escape) leaves the prompt with nothing after it.
 */
const IDLE_GRACE_MS = 3_000;

type ClineRecord =
  | { kind: 'message'; index: number; message: ClineMessage }
  | { kind: 'status'; status: string; count: number }
  | { kind: 'header' };

export function normaliseForMatch(text: string): string {
  return text.replace(/\r\n?/g, '\n');
}

/** The command line(s) of a `run_commands` call (its input takes several shapes: `commands`, `command`, `cmd`). */
function commandsOf(input: unknown): string | null {
  const one = (c: unknown): string | null => (typeof c === 'string' ? c : c && typeof c === 'object' && typeof (c as { command?: unknown }).command === 'string' ? (c as { command: string }).command : null);
  if (typeof input === 'string') return input;
  if (Array.isArray(input)) return input.map(one).filter((c) => c !== null).join('; ') || null;
  if (!input || typeof input !== 'object') return null;
  const i = input as Record<string, unknown>;
  if (Array.isArray(i.commands)) return i.commands.map(one).filter((c) => c !== null).join('; ') || null;
  return one(i.commands) ?? one(i.command) ?? one(i.cmd);
}

/** Cline's record of a turn that failed: an assistant message shown as an error, never sent to the model. */
function isErrorMessage(m: ClineMessage): boolean {
  const meta = (m as { metadata?: { displayRole?: unknown } }).metadata;
  return meta?.displayRole === 'error';
}

export class ClineTurnObserver extends TranscriptTurnObserver<ClineRecord> {
  /** The index of our prompt in the conversation (-1 until it is there). */
  private promptIndex = -1;
  /** How many messages came before our turn (the prompt's index once it is recorded). */
  private base = -1;
  private readonly messages = new Map<number, ClineMessage>();
  private count = 0;
  private idleSince: number | null = null;

  protected classify(value: unknown): ClineRecord | null {
    const parsed = MirrorRecord.safeParse(value);
    if (!parsed.success) return null;
    const rec = parsed.data;
    if (rec.kind === 'cline-mirror') return { kind: 'header' };
    if (rec.kind === 'message') return { kind: 'message', index: rec.index, message: rec.message };
    return { kind: 'status', status: rec.status, count: rec.messages };
  }

  protected normalise(text: string): string {
    return normaliseForMatch(text);
  }

  private ours(rec: ClineRecord): boolean {
    if (rec.kind !== 'message') return false;
    const prompt = promptText(rec.message);
    return prompt !== null && this.isOurPrompt(prompt);
  }

  /**
   * Our prompt, or the session going `running` after the send: Cline records the prompt in its
   * conversation only with the model's first reply (measured: a reply held back 15 s left it
   * unrecorded), but marks the session running at once. cal holds the handle's lock and sent the
   * message, so the first run after the send is ours; records older than the send never count.
   */
  protected whileWaiting(rec: ClineRecord): void {
    if (rec.kind === 'message' && this.ours(rec)) {
      this.promptIndex = rec.index;
      this.base = rec.index;
      this.messages.set(rec.index, rec.message);
      this.count = rec.index + 1;
      this.begin(rec.message.id ?? null);
    } else if (rec.kind === 'status' && rec.status === 'running') {
      this.base = rec.count;
      this.count = rec.count;
      this.begin(null);
    }
  }

  /** Where the turn's own messages start (after its prompt). */
  private get start(): number {
    return this.promptIndex >= 0 ? this.promptIndex : this.base;
  }

  protected whileRunning(rec: ClineRecord): void {
    if (rec.kind === 'header') return;
    if (rec.kind === 'message') {
      if (rec.index < this.base) return;
      if (this.promptIndex < 0 && this.ours(rec)) {
        this.promptIndex = rec.index;
        this.turnKey = rec.message.id ?? null;
      }
      if (rec.index <= this.start) return;
      this.messages.set(rec.index, rec.message);
      this.count = Math.max(this.count, rec.index + 1);
      this.collect();
    } else {
      this.idleSince = rec.status === 'running' || rec.status === 'pending' ? null : (this.idleSince ?? Date.now());
      this.count = Math.max(this.count, rec.count);
    }
    this.decide();
  }

  protected override settle(now: number): void {
    if (this.idleSince === null || now - this.idleSince < IDLE_GRACE_MS) return;
    // Measured: an Escape leaves the prompt recorded and nothing after it; a model error is
    // recorded as an error message (decide); a prompt never recorded is a turn Cline did not run.
    if (this.promptIndex >= 0 && this.count - 1 === this.promptIndex) this.end('interrupted', null, null);
    else this.end('failed', null, 'Cline ended the turn (its session went idle) with no answer recorded in its conversation');
  }

  /** The turn's tools and its answer so far, from the messages after the prompt. */
  private collect(): void {
    const tools: ToolActivity[] = [];
    const byId = new Map<string, ToolActivity>();
    let answer: string | null = null;
    for (let i = this.start + 1; i < this.count; i++) {
      const m = this.messages.get(i);
      if (!m || !Array.isArray(m.content)) {
        if (m?.role === 'assistant') answer = textOf(m);
        continue;
      }
      if (m.role === 'assistant' && !isErrorMessage(m)) {
        const text = textOf(m);
        if (text) answer = text;
      }
      for (const b of m.content) {
        if (b.type === 'tool_use' && typeof b.name === 'string') {
          const mcp = /^(.+?)__(.+)$/.exec(b.name);
          const tool: ToolActivity = b.name === 'run_commands' ? { kind: 'shell', name: commandsOf(b.input) ?? b.name, input: b.input } : mcp ? { kind: 'mcp', name: mcp[2] as string, server: mcp[1] as string, input: b.input } : { kind: 'tool', name: b.name, input: b.input };
          tools.push(tool);
          if (typeof b.id === 'string') byId.set(b.id, tool);
        } else if (b.type === 'tool_result' && typeof b.tool_use_id === 'string') {
          const tool = byId.get(b.tool_use_id);
          if (tool) tool.output = unwrapJsonResult(typeof b.content === 'string' ? b.content : JSON.stringify(b.content));
        }
      }
    }
    this.tools = tools;
    this.lastAnswer = answer;
  }

  private decide(): void {
    if (this.idleSince === null) return;
    const last = this.messages.get(this.count - 1);
    if (this.count - 1 <= this.start || !last || last.role !== 'assistant') return;
    const pending = Array.isArray(last.content) && last.content.some((b) => b.type === 'tool_use');
    if (pending) return;
    this.collect();
    if (isErrorMessage(last)) {
      this.end('failed', null, textOf(last) || 'Cline recorded an error');
      return;
    }
    this.end('completed', textOf(last), null);
  }
}
