import type { ToolActivity } from '../../handles/tool-activity.js';

/**
 * Reads one ACP turn out of the agent's `session/update` notifications. Two phases: before cal
 * sends `session/prompt` every update is history (`session/load` replays the whole conversation
 * as updates, and Gemini CLI 0.61.0 goes on replaying after its load answered), and after it the
 * turn's own. The answer is the text of `agent_message_chunk` updates since the last tool call
 * (text before a tool call belonged to a step that went on with tools), the tools come from
 * `tool_call`/`tool_call_update`.
 */
export interface AcpUpdate {
  sessionUpdate: string;
  [key: string]: unknown;
}

interface ToolState {
  title: string;
  kind: string | null;
  input: unknown;
  output: string | undefined;
  status: string | undefined;
}

export class AcpTurnReader {
  /** Updates that arrived before the prompt (a load's replay, the agent's command list). */
  historyUpdates = 0;
  /** Updates of a kind the reader does not use (plans, mode changes, usage). */
  otherUpdates = 0;
  /** A replayed message that arrived after the prompt was sent: the text before it was history. */
  lateReplays = 0;
  private phase: 'history' | 'turn' = 'history';
  private text = '';
  private readonly tools = new Map<string, ToolState>();
  private readonly order: string[] = [];

  constructor(private readonly message: string) {}

  /** From now on, updates are the new turn's. */
  promptSent(): void {
    this.phase = 'turn';
  }

  feed(update: AcpUpdate): void {
    if (this.phase === 'history') {
      this.historyUpdates++;
      return;
    }
    switch (update.sessionUpdate) {
      case 'agent_message_chunk': {
        const text = textOf(update.content);
        if (text !== null) this.text += text;
        break;
      }
      case 'user_message_chunk': {
        // An agent may echo the prompt; any other user message is a replay still arriving, so
        // whatever text came before it was history too.
        const text = textOf(update.content);
        if (text !== null && text.trim() !== '' && !this.message.includes(text.trim())) {
          this.lateReplays++;
          this.text = '';
        }
        break;
      }
      case 'tool_call':
        this.text = '';
        this.toolCall(update, true);
        break;
      case 'tool_call_update':
        this.toolCall(update, false);
        break;
      default:
        this.otherUpdates++;
    }
  }

  private toolCall(update: AcpUpdate, opened: boolean): void {
    const id = typeof update.toolCallId === 'string' ? update.toolCallId : null;
    if (!id) return;
    let tool = this.tools.get(id);
    if (!tool) {
      if (!opened && typeof update.title !== 'string') return;
      tool = { title: '', kind: null, input: undefined, output: undefined, status: undefined };
      this.tools.set(id, tool);
      this.order.push(id);
    }
    if (typeof update.title === 'string') tool.title = update.title;
    if (typeof update.kind === 'string') tool.kind = update.kind;
    if (update.rawInput !== undefined) tool.input = update.rawInput;
    if (typeof update.status === 'string') tool.status = update.status;
    // A call's own content describes it (Gemini 0.61.0: "[current working directory …] (Run: …)");
    // only an update's content or raw output is what the tool gave.
    if (opened) return;
    const output = contentText(update.content) ?? (update.rawOutput !== undefined ? JSON.stringify(update.rawOutput) : undefined);
    if (output !== undefined) tool.output = output;
  }

  get answer(): string | null {
    return this.text.trim() === '' ? null : this.text;
  }

  get partialAnswer(): string {
    return this.text;
  }

  get toolActivity(): ToolActivity[] {
    return this.order.map((id) => {
      const t = this.tools.get(id) as ToolState;
      return {
        kind: t.kind === 'execute' ? 'shell' : 'tool',
        name: t.title || t.kind || 'tool',
        ...(t.input !== undefined ? { input: t.input } : {}),
        ...(t.output !== undefined ? { output: t.output } : {}),
        ...(t.status !== undefined ? { status: t.status } : {}),
      };
    });
  }
}

/** The text of one ContentBlock (`{type: 'text', text}`), null for another kind. */
function textOf(content: unknown): string | null {
  if (typeof content !== 'object' || content === null) return null;
  const c = content as { type?: unknown; text?: unknown };
  return c.type === 'text' && typeof c.text === 'string' ? c.text : null;
}

/** The text of a tool call's content list (`[{type: 'content', content: {type: 'text', text}}]`), if any. */
function contentText(content: unknown): string | undefined {
  if (!Array.isArray(content)) return undefined;
  const texts = content.flatMap((item) => {
    const inner = typeof item === 'object' && item !== null ? textOf((item as { content?: unknown }).content) : null;
    return inner !== null ? [inner] : [];
  });
  return texts.length > 0 ? texts.join('\n') : undefined;
}
