import { randomBytes } from '../util/random.js';
import { existsSync, realpathSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { packagePath } from '../util/package-root.js';
import { feedJsonLines } from '../util/json-lines.js';
import { z } from '../util/zod.js';
import { loadCliAdapter } from '../adapters/registry.js';
import { INTERRUPT_KEY_GAP_MS, type Capabilities } from '../adapters/types.js';
import type { PinnedCli, ProviderName, Transport } from '../handles/schema.js';
import { startModelServer, type ModelRequestLogEntry, type ModelServer } from '../model/server.js';
import { AgentSessions, type TurnResult } from '../sessions/agent-sessions.js';
import type { TurnRecord } from '../state/turns.js';
import { StateStore, type EventRecord } from '../state/store.js';
import { allowProbeToolInProject } from './fixtures.js';
import { mcpProbeSource } from './mcp-probe.js';
import { killMarked } from './processes.js';
import { startRecordingProxy, type RecordingProxy } from './recording-proxy.js';
import { CertFailure, type CertId } from './types.js';
import { runExeca } from '../util/spawn.js';

/** What one certify run is about; shared by every scenario of the run. */
export interface RunSettings {
  provider: ProviderName;
  /** The executable every session starts with (the --cli-path given, or the one found on PATH). */
  cliPath: string;
  /** The name the CLI is looked up by on PATH (claude, codex, …). */
  executable: string;
  pinned: PinnedCli;
  capabilities: Capabilities;
  live: boolean;
  /** The user's environment (live mode hands it to the CLI as it is). */
  userEnv: Record<string, string>;
  /** Seconds a single turn may take before the scenario gives up on it. */
  turnTimeoutSeconds: number;
  /** Folder that holds every scenario's scratch folder. */
  scratchRoot: string;
}

/** Variables a CLI needs to run at all; in scripted mode nothing else of the user's reaches it. */
const SCRIPTED_ENV_KEEP = ['PATH', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TERM', 'TZ', 'USER', 'LOGNAME', 'SHELL'];

/** The built `cal` entry, for scenarios that need a second cal process (a user's next call). */
export function calEntry(): string {
  return packagePath('bin', 'cal.cjs');
}

export interface WorkDir {
  /** The path as the session is given it (a symlink when asked for one). */
  path: string;
  realPath: string;
}

/** One line of the MCP probe's request log (certify/mcp-probe.ts writes it). */
const ProbeRequest = z.object({ method: z.string(), name: z.string().optional(), arguments: z.unknown().optional() });
export type ProbeRequest = z.infer<typeof ProbeRequest>;

export interface CalProcessResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

/** The scripted model's view of what the CLI sent: its request log, by conversation turn. */
export class ModelView {
  constructor(private readonly server: ModelServer) {}

  get url(): string {
    return this.server.url;
  }

  /** Conversation requests (no side requests), optionally those of one native session only. */
  turns(sessionKey?: string | null): ModelRequestLogEntry[] {
    const all = this.server.turnRequests();
    return sessionKey === undefined ? all : all.filter((r) => r.sessionKey === sessionKey);
  }

  /** A mark in the log: `since(mark)` returns what came after it. */
  mark(): number {
    return this.server.requests().reduce((max, r) => Math.max(max, r.seq), 0);
  }

  since(mark: number, sessionKey?: string | null): ModelRequestLogEntry[] {
    return this.turns(sessionKey).filter((r) => r.seq > mark);
  }

  /** Requests whose last user message contains `text`. */
  carrying(text: string, mark = 0): ModelRequestLogEntry[] {
    return this.since(mark).filter((r) => (r.lastUserMessage ?? '').includes(text));
  }
}

/**
 * Everything a scenario works with: a throwaway state directory (so its own tmux server), its
 * own scripted model server (or the vendor's service in live mode), a throwaway CLI home, and
 * helpers that start and continue sessions through the agent-session layer like a command does.
 */
export class ScenarioContext {
  readonly notes: string[] = [];
  private proxies: RecordingProxy[] = [];
  private counter = 0;

  private constructor(
    readonly id: CertId,
    readonly settings: RunSettings,
    readonly root: string,
    readonly store: StateStore,
    readonly sessions: AgentSessions,
    readonly env: Record<string, string>,
    private readonly server: ModelServer | null,
  ) {}

  static async create(id: CertId, settings: RunSettings): Promise<ScenarioContext> {
    const root = realpathSync(await fs.mkdtemp(path.join(settings.scratchRoot, `${id}-`)));
    const store = await StateStore.open(path.join(root, 'state'));
    let server: ModelServer | null = null;
    let env: Record<string, string>;
    if (settings.live) {
      env = { ...settings.userEnv };
    } else {
      server = await startModelServer({ maxLogEntries: 5000 });
      const base: Record<string, string> = {};
      for (const key of SCRIPTED_ENV_KEEP) if (settings.userEnv[key] !== undefined) base[key] = settings.userEnv[key] as string;
      base.HOME = path.join(root, 'home');
      base.TMPDIR = path.join(root, 'tmp');
      await fs.mkdir(base.HOME, { recursive: true, mode: 0o700 });
      await fs.mkdir(base.TMPDIR, { recursive: true, mode: 0o700 });
      env = await AgentSessions.scriptedModelEnv(settings.provider, root, server.url, base);
    }
    return new ScenarioContext(id, settings, root, store, new AgentSessions(store), env, server);
  }

  get scripted(): boolean {
    return this.server !== null;
  }

  get provider(): ProviderName {
    return this.settings.provider;
  }

  /** The scripted model's request log; a scenario that needs it is skipped in live mode. */
  get model(): ModelView {
    if (!this.server) throw new CertFailure('this check needs the scripted model (it is not available with --live)');
    return new ModelView(this.server);
  }

  get stateDir(): string {
    return this.store.layout.root;
  }

  /** Records what the scenario saw; the notes are the evidence shown in the table. */
  note(text: string): void {
    this.notes.push(text);
  }

  check(condition: unknown, failure: string): asserts condition {
    if (!condition) throw new CertFailure(failure);
  }

  /** A codeword nobody else uses (letters and digits, as the scripted model wants them). */
  codeword(prefix = 'CERT'): string {
    return `${prefix}${randomBytes(4).toString('hex').toUpperCase()}`;
  }

  async workDir(opts: { git?: boolean; viaSymlink?: boolean; name?: string } = {}): Promise<WorkDir> {
    const name = opts.name ?? `work${++this.counter}`;
    const real = path.join(this.root, name);
    await fs.mkdir(real, { recursive: true });
    if (opts.git) await runExeca('git', ['init', '-q', real], { env: this.env, reject: true });
    const realPath = realpathSync(real);
    if (!opts.viaSymlink) return { path: realPath, realPath };
    const link = path.join(this.root, `${name}-link`);
    await fs.symlink(realPath, link);
    return { path: link, realPath };
  }

  /** `cal start` through the agent-session layer. */
  async start(
    message: string,
    opts: {
      cwd: string;
      name?: string;
      systemPrompt?: string;
      mcpConfig?: string;
      transport?: Transport;
      env?: Record<string, string>;
      timeoutSeconds?: number;
      onEvent?: (event: EventRecord) => void;
    },
  ): Promise<TurnResult> {
    return this.sessions.start({
      provider: this.provider,
      message,
      cwd: opts.cwd,
      name: opts.name,
      systemPrompt: opts.systemPrompt,
      mcpConfig: opts.mcpConfig,
      transport: opts.transport,
      cliPath: this.settings.cliPath,
      timeoutSeconds: opts.timeoutSeconds ?? this.settings.turnTimeoutSeconds,
      env: opts.env ?? this.env,
      onEvent: opts.onEvent,
    });
  }

  /** `cal continue` through the agent-session layer. */
  async continue(
    ref: string,
    message: string,
    opts: { cwd?: string; waitSeconds?: number; env?: Record<string, string>; timeoutSeconds?: number; onEvent?: (event: EventRecord) => void } = {},
  ): Promise<TurnResult> {
    return this.sessions.continue({
      ref,
      message,
      cwd: opts.cwd,
      waitSeconds: opts.waitSeconds,
      timeoutSeconds: opts.timeoutSeconds ?? this.settings.turnTimeoutSeconds,
      env: opts.env ?? this.env,
      onEvent: opts.onEvent,
    });
  }

  /** A start that must complete; anything else fails the scenario with the CLI's own words. */
  async startCompleted(message: string, opts: Parameters<ScenarioContext['start']>[1]): Promise<TurnResult> {
    const run = await this.start(message, opts).catch(async (err: unknown) => {
      throw new CertFailure(`start "${short(message, 32)}" failed: ${errorText(err)}${await this.screenHint(errorHandle(err))}`);
    });
    this.check(run.turn.status === 'completed', `start "${short(message, 32)}" ended ${run.turn.status}${run.turn.error ? `: ${run.turn.error.message}` : ''}${await this.screenHint(run.handle.id)}`);
    return run;
  }

  async continueCompleted(ref: string, message: string, opts: Parameters<ScenarioContext['continue']>[2] = {}): Promise<TurnResult> {
    const run = await this.continue(ref, message, opts).catch(async (err: unknown) => {
      throw new CertFailure(`continue "${short(message, 32)}" failed: ${errorText(err)}${await this.screenHint(ref)}`);
    });
    this.check(run.turn.status === 'completed', `continue "${short(message, 32)}" ended ${run.turn.status}${run.turn.error ? `: ${run.turn.error.message}` : ''}${await this.screenHint(ref)}`);
    return run;
  }

  /** The last lines of a session's pane, as a diagnostic for a failure (never an answer). */
  async screenHint(ref: string | null): Promise<string> {
    if (!ref) return '';
    const screen = await this.sessions.screen(ref).catch(() => null);
    if (!screen) return '';
    const lines = screen.split('\n').map((l) => l.trim()).filter((l) => l && !/^[─━═-]+$/.test(l));
    return lines.length ? ` [screen: ${short(lines.slice(-6).join(' / '), 400)}]` : '';
  }

  /** The turns of a handle as cal recorded them. */
  async turns(ref: string): Promise<TurnRecord[]> {
    return (await this.sessions.describe(ref)).turns;
  }

  /** Waits until the handle's latest turn for `message` reaches one of `statuses`. */
  async waitForTurn(ref: string, message: string, statuses: string[], timeoutMs = 30_000): Promise<TurnRecord> {
    let found: TurnRecord | undefined;
    await this.waitFor(`the turn "${short(message)}" to be ${statuses.join(' or ')}`, async () => {
      const turns = await this.turns(ref).catch(() => []);
      found = [...turns].reverse().find((t) => t.message === message);
      return found !== undefined && statuses.includes(found.status);
    }, timeoutMs);
    return found as TurnRecord;
  }

  async waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 30_000, everyMs = 100): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await check()) return;
      if (Date.now() > deadline) throw new CertFailure(`timed out after ${Math.round(timeoutMs / 1000)}s waiting for ${what}`);
      await sleep(everyMs);
    }
  }

  /** Runs the built `cal` as a separate process on this scenario's state directory. */
  async cal(args: string[], opts: { env?: Record<string, string>; timeoutMs?: number; cwd?: string } = {}): Promise<CalProcessResult> {
    const res = await runExeca(process.execPath, [calEntry(), '--state-dir', this.stateDir, ...args], {
      cwd: opts.cwd ?? this.root,
      env: opts.env ?? this.env,
      reject: false,
      timeout: opts.timeoutMs ?? (this.settings.turnTimeoutSeconds + 30) * 1000,
    });
    let json: unknown = null;
    try {
      json = JSON.parse(res.stdout);
    } catch {
      json = null;
    }
    return { code: res.exitCode ?? -1, stdout: res.stdout, stderr: res.stderr, json };
  }

  /**
   * An MCP config with one stdio server, `calprobe`, whose `echo` tool logs every request to a
   * file. The server's command line carries this scenario's folder, so a process left behind is
   * found. Given a project folder, the project also allows the probe's tool (see fixtures.ts).
   */
  async mcpProbe(project?: WorkDir): Promise<{ config: string; calls: () => Promise<ProbeRequest[]>; requests: () => Promise<ProbeRequest[]> }> {
    const script = path.join(this.root, 'mcp-probe.mjs');
    const log = path.join(this.root, 'mcp-requests.jsonl');
    await fs.writeFile(script, mcpProbeSource(), { mode: 0o600 });
    const config = path.join(this.root, 'mcp.json');
    await fs.writeFile(config, JSON.stringify({ mcpServers: { calprobe: { command: process.execPath, args: [script, log] } } }, null, 2), { mode: 0o600 });
    if (project) await allowProbeToolInProject(this.provider, project.realPath);
    const requests = async () => {
      const text = await fs.readFile(log, 'utf8').catch(() => '');
      // A line the probe was still writing (or one that is no request) is not a request.
      const out: ProbeRequest[] = [];
      feedJsonLines(text, (value) => {
        const parsed = ProbeRequest.safeParse(value);
        if (parsed.success) out.push(parsed.data);
      });
      return out;
    };
    return { config, requests, calls: async () => (await requests()).filter((r) => r.method === 'tools/call') };
  }

  /**
   * An environment whose model URL goes through a proxy that keeps every raw request body (to
   * see what the CLI itself sent: system prompt, tools), in a second throwaway home.
   */
  async recordingEnv(): Promise<{ env: Record<string, string>; bodies: () => string[] }> {
    const upstream = this.model.url;
    const proxy = await startRecordingProxy(upstream);
    this.proxies.push(proxy);
    const dir = path.join(this.root, `recorded-${++this.counter}`);
    await fs.mkdir(path.join(dir, 'tmp'), { recursive: true, mode: 0o700 });
    const base: Record<string, string> = {};
    for (const key of SCRIPTED_ENV_KEEP) if (this.env[key] !== undefined) base[key] = this.env[key] as string;
    base.HOME = path.join(dir, 'home');
    base.TMPDIR = path.join(dir, 'tmp');
    await fs.mkdir(base.HOME, { recursive: true, mode: 0o700 });
    const env = await AgentSessions.scriptedModelEnv(this.provider, dir, proxy.url, base);
    return { env, bodies: () => proxy.bodies() };
  }

  /** Interrupts the running turn as a user at the pane would: Escape, or the CLI's own interrupt key. */
  async interrupt(ref: string): Promise<void> {
    const adapter = await loadCliAdapter(this.provider);
    for (const [i, key] of (adapter.interruptKeys ?? ['Escape']).entries()) {
      if (i > 0) await new Promise((r) => setTimeout(r, INTERRUPT_KEY_GAP_MS));
      await this.pressKeys(ref, [key]);
    }
  }

  /** Presses keys in the session's pane, as a user at the terminal would. */
  async pressKeys(ref: string, keys: string[]): Promise<void> {
    const sent = await this.sessions.pressKeys(ref, keys);
    this.check(sent, 'the session has no pane to send keys to');
  }

  /** Kills the scenario's panes, servers and processes; removes its folder unless asked to keep it. */
  async dispose(keep: boolean): Promise<void> {
    await this.sessions.shutdownTransports().catch(() => undefined);
    for (const proxy of this.proxies) await proxy.close().catch(() => undefined);
    await this.server?.close().catch(() => undefined);
    // Anything still running with this scenario's folder in its command line, environment or
    // working directory was started by this scenario: end it.
    await killMarked(this.root).catch(() => 0);
    if (!keep) await fs.rm(this.root, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
  }
}

export function errorText(err: unknown): string {
  if (err && typeof err === 'object' && 'kind' in err && 'message' in err) return `${String((err as { kind: unknown }).kind)}: ${String((err as { message: unknown }).message)}`;
  return err instanceof Error ? err.message : String(err);
}

export function errorHandle(err: unknown): string | null {
  const handle = err && typeof err === 'object' && 'details' in err ? (err as { details?: { handle?: unknown } }).details?.handle : undefined;
  return typeof handle === 'string' ? handle : null;
}

export function errorKind(err: unknown): string | null {
  return err && typeof err === 'object' && 'kind' in err ? String((err as { kind: unknown }).kind) : null;
}

export function short(text: string, max = 48): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function exists(file: string): boolean {
  return existsSync(file);
}
