import fs from 'node:fs/promises';
import path from 'node:path';
import type { CliAdapter, SessionConfig, TurnObservation } from '../../src/adapters/types.js';
import type { PinnedCli } from '../../src/handles/schema.js';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { TmuxServer } from '../../src/tmux/tmux.js';
import { readJsonlFrom } from '../../src/transcripts/jsonl-tail.js';
import { baseEnv, scratchDir } from './cal.js';
import { removeScratch } from './scratch.js';

/**
 * TEMPORARY: drives one adapter and real tmux directly, the way the engine will once it hands
 * `LaunchRequest.sessionDir` to adapters and tails `LaunchPlan.signalFile` beside the transcript
 * (feeding `TurnObserver.feedSignal`). Until then the version-matrix proofs of the adapter's
 * second end-of-turn signal run through this; the same proofs through `cal` are in
 * test/e2e/cli-versions.test.ts. Polls every 250 ms, as the engine does.
 */
export interface HarnessTurn {
  observation: TurnObservation;
  /** When the turn was seen to end (ms since the epoch). */
  endedAt: number;
  /** The `timestamp` of the last assistant record of the turn (Claude Code), or null. */
  lastAssistantAt: number | null;
  /**
   * When the CLI was done with the turn by its own records: the latest of its last assistant
   * record, its end records (`stop_hook_summary`, `turn_duration`, the hook notice older
   * releases write) and the time its Stop hook ran (Claude Code), or null.
   */
  cliFinishedAt: number | null;
  /** When the CLI's own end record was written (Codex `task_complete`), or null. */
  endRecordAt: number | null;
}

export interface Harness {
  server: ModelServer;
  cli: PinnedCli;
  env: Record<string, string>;
  work: string;
  sessionDir: string;
  transcriptPath(): string | null;
  /** A launch (`fresh` the first time, `resume` after `kill`), or a paste into the live pane. */
  turn(message: string, timeoutMs?: number): Promise<HarnessTurn>;
  kill(): Promise<void>;
  close(): Promise<void>;
}

const POLL_MS = 250;

export async function adapterHarness(adapter: CliAdapter, cliPath: string, opts: { prefix: string; toolPolicy?: string }): Promise<Harness> {
  const server = await startModelServer({});
  const root = await scratchDir(opts.prefix);
  const env = await adapter.scriptedModelEnv(root, server.url, baseEnv({}));
  const cli = await adapter.resolveCli(cliPath, env);
  const work = path.join(root, 'work');
  await fs.mkdir(work, { recursive: true });
  const sessionDir = path.join(root, 'session');
  await fs.mkdir(sessionDir, { recursive: true, mode: 0o700 });
  const config: SessionConfig = { cwd: await fs.realpath(work), model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: opts.toolPolicy ?? 'default' };
  const tmux = new TmuxServer(path.join(root, 'tmux.sock'));
  let paneId: string | null = null;
  let launches = 0;
  let pendingId: string | null = null;
  let nativeId: string | null = null;
  let transcript: { path: string; offset: number } | null = null;
  let signals: { path: string; offset: number } | null = null;

  async function turn(message: string, timeoutMs = 120_000): Promise<HarnessTurn> {
    const sentAt = new Date(Date.now() - 1000);
    const observer = adapter.observeTurn(message, sentAt);
    if (paneId && (await tmux.isPaneAlive(paneId))) {
      await tmux.paste(paneId, adapter.pasteText(message), true);
    } else {
      const mode = nativeId ? 'resume' : 'fresh';
      await adapter.prepare(env, config);
      const plan = adapter.launch({ cli, env, config, mode, sessionId: mode === 'resume' ? nativeId : pendingId, message: adapter.pasteText(message), sessionDir });
      if (mode === 'fresh') pendingId = plan.sessionId;
      if (plan.signalFile) signals ??= { path: plan.signalFile, offset: 0 };
      const pane = await tmux.newPane({ session: `h${launches++}`, cwd: plan.cwd, argv: plan.argv, env: plan.env });
      paneId = pane.paneId;
      if (!plan.deliversMessage) await tmux.paste(paneId, adapter.pasteText(message), true);
    }
    let lastAssistantAt: number | null = null;
    let endRecordAt: number | null = null;
    let cliFinishedAt: number | null = null;
    const finished = (t: number) => {
      if (!Number.isNaN(t) && t >= sentAt.getTime()) cliFinishedAt = Math.max(cliFinishedAt ?? 0, t);
    };
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!transcript) {
        const bound = await adapter.bindTranscript({ env, config, sessionId: pendingId, message, sentAt });
        if (bound) {
          transcript = { path: bound.path, offset: 0 };
          nativeId = bound.sessionId;
        }
      }
      if (signals && observer.feedSignal) {
        const read = await readJsonlFrom(signals.path, signals.offset);
        for (const rec of read.records) {
          observer.feedSignal(rec.value);
          const sig = rec.value as { hook_event_name?: string; cal_received_at?: string };
          if (sig.hook_event_name === 'Stop' && sig.cal_received_at) finished(Date.parse(sig.cal_received_at));
        }
        signals.offset = read.offset;
      }
      if (transcript) {
        const read = await readJsonlFrom(transcript.path, transcript.offset);
        for (const rec of read.records) {
          observer.feed(rec.value);
          transcript.offset = rec.endOffset;
          const v = rec.value as { type?: string; subtype?: string; timestamp?: string; payload?: { type?: string } };
          const at = v.timestamp ? Date.parse(v.timestamp) : NaN;
          if (observer.observation.phase !== 'waiting') {
            // The record that ends the turn counts too (the end may be read in the same poll as the answer).
            if (v.type === 'assistant') lastAssistantAt = at;
            if (v.type === 'assistant' || (v.type === 'system' && ['stop_hook_summary', 'turn_duration', 'informational'].includes(v.subtype ?? ''))) finished(at);
          }
          if (v.payload?.type === 'task_complete') endRecordAt = at;
          if (observer.observation.phase === 'ended') break;
        }
        if (observer.observation.phase !== 'ended') transcript.offset = read.offset;
      }
      const obs = observer.observation;
      const endedAt = Date.now();
      if (obs.phase === 'ended') {
        // A Stop signal written just before the transcript record that ended the turn.
        if (signals) for (const rec of (await readJsonlFrom(signals.path, signals.offset)).records) {
          const sig = rec.value as { hook_event_name?: string; cal_received_at?: string };
          if (sig.hook_event_name === 'Stop' && sig.cal_received_at) finished(Date.parse(sig.cal_received_at));
        }
        return { observation: obs, endedAt, lastAssistantAt, cliFinishedAt, endRecordAt };
      }
      if (paneId) {
        const state = await tmux.paneState(paneId);
        if (!state.exists || state.dead) throw new Error(`the CLI's pane died: ${(await tmux.capture(paneId).catch(() => '')).slice(-400)}`);
      }
      if (Date.now() > deadline) {
        const screen = paneId ? await tmux.capture(paneId).catch(() => '') : '';
        throw new Error(`no end of turn within ${timeoutMs} ms (observation ${JSON.stringify(obs)}); pane: ${screen.split('\n').filter((l) => l.trim()).slice(-8).join(' / ')}`);
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  return {
    server,
    cli,
    env,
    work,
    sessionDir,
    transcriptPath: () => transcript?.path ?? null,
    turn,
    async kill() {
      if (paneId) await tmux.killServer().catch(() => undefined);
      paneId = null;
    },
    async close() {
      await tmux.killServer().catch(() => undefined);
      await server.close();
      await removeScratch(root);
    },
  };
}
