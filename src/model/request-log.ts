/** The scripted model server's request log: kept in memory and optionally appended to a JSONL file. */
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';

export interface ModelRequestLogEntry {
  seq: number;
  /** ISO time the request was answered (decided). */
  time: string;
  dialect: 'anthropic' | 'openai-responses' | 'openai-chat' | 'gemini' | 'none';
  method: string;
  path: string;
  status: number;
  /** Claude metadata.user_id session_id, Codex session-id/thread-id header, and so on. */
  sessionKey: string | null;
  /** Title/router/utility request, not a conversation turn. */
  side: boolean;
  /** The user's own text of every user turn in the request history, in order. */
  userMessages: string[];
  lastUserMessage: string | null;
  /** The text answered (or a tool call summary); null for errors and non-model requests. */
  reply: string | null;
  /** Raw bodies of the `[[cal:…]]` directives found in the last user message. */
  directives: string[];
  /** The model name the client asked for, when it sent one. */
  model: string | null;
}

export class RequestLog {
  private readonly entries: ModelRequestLogEntry[] = [];
  private nextSeq = 1;
  private fileFailed = false;

  constructor(
    private readonly file?: string,
    /** Keep at most this many entries in memory (oldest dropped); the JSONL file keeps all. */
    private readonly maxEntries = Number.POSITIVE_INFINITY,
  ) {
    if (file) mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  }

  /** Assign the next sequence number; entries are recorded with `add`. */
  seq(): number {
    return this.nextSeq++;
  }

  add(entry: ModelRequestLogEntry): void {
    this.entries.push(entry);
    if (this.entries.length > this.maxEntries) this.entries.splice(0, this.entries.length - this.maxEntries);
    if (!this.file || this.fileFailed) return;
    try {
      appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
    } catch (err) {
      this.fileFailed = true;
      process.emitWarning(`scripted model: cannot append to request log ${this.file}: ${(err as Error).message}`);
    }
  }

  all(): ModelRequestLogEntry[] {
    return this.entries.map((e) => ({ ...e, userMessages: [...e.userMessages], directives: [...e.directives] }));
  }

  clear(): void {
    this.entries.length = 0;
  }
}
