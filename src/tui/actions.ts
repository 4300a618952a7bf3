import type { ToolActivity } from '../state/turns.js';
import type { InspectSource, NewSessionRequest, TurnOutcome, TurnWatch } from './source.js';

/** A turn sent from the TUI (`s` or `n`): what the view shows of it while it runs and once it ended. */
export interface Activity {
  /** Which key started it. */
  kind: 'send' | 'start';
  /** The handle id (for `n`: once the library named it; null before). */
  handle: string | null;
  turn: string | null;
  message: string;
  /** `sending` until the library reports progress, then its phase (waiting, running, ended). */
  phase: string;
  tools: readonly ToolActivity[];
  partialAnswer: string;
  /** Set once the call returned: the answer, or the error as one line (`kind: message`). */
  ended: { answer: string | null } | { error: string } | null;
  startedAt: number;
}

/** `kind: message` for a typed error (CalError and TurnError carry `kind`), the message otherwise. */
export function errorLine(err: unknown): string {
  if (err && typeof err === 'object' && 'kind' in err && 'message' in err) return `${String(err.kind)}: ${String(err.message)}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * The turns sent from this TUI, kept outside React so they outlive the view (attaching unmounts
 * Ink; the turn goes on in this process and is shown again when the view comes back). Each turn
 * is one library call (continue or start) with an AbortSignal: quitting cancels what is still in
 * flight, as Ctrl-C does `cal continue`.
 */
export class Actions {
  private readonly list: Activity[] = [];
  private readonly listeners = new Set<() => void>();
  private readonly controllers = new Set<AbortController>();
  private readonly calls = new Set<Promise<void>>();
  private version = 0;

  constructor(
    private readonly source: InspectSource,
    private readonly clock: () => number = Date.now,
  ) {}

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Changes with every update (for useSyncExternalStore). */
  snapshot = (): number => this.version;

  /** The newest activity on a handle. */
  of(handleId: string): Activity | undefined {
    return this.list.findLast((a) => a.handle === handleId);
  }

  /** Sessions being started by `n` whose handle is not known yet. */
  starting(): Activity[] {
    return this.list.filter((a) => a.handle === null && a.ended === null);
  }

  /** How many turns sent from here have ended (the view reads the list again after each). */
  ended(): number {
    return this.list.filter((a) => a.ended !== null).length;
  }

  /** How many turns sent from here are still in flight. */
  inFlight(): number {
    return this.list.filter((a) => a.ended === null).length;
  }

  send(handleId: string, message: string): void {
    const activity = this.add('send', handleId, message);
    this.run(activity, (watch) => this.source.send(handleId, message, watch));
  }

  start(request: NewSessionRequest): void {
    const activity = this.add('start', null, request.message);
    this.run(activity, (watch) => this.source.start(request, watch));
  }

  /** Cancels every turn still in flight (the library settles each) and waits until all calls returned. */
  async cancelAll(): Promise<void> {
    for (const c of this.controllers) c.abort();
    await this.settled();
  }

  /** Resolves once no call is running. */
  async settled(): Promise<void> {
    while (this.calls.size > 0) await Promise.allSettled([...this.calls]);
  }

  private add(kind: Activity['kind'], handle: string | null, message: string): Activity {
    const activity: Activity = { kind, handle, turn: null, message, phase: 'sending', tools: [], partialAnswer: '', ended: null, startedAt: this.clock() };
    this.list.push(activity);
    this.changed();
    return activity;
  }

  private run(activity: Activity, call: (watch: TurnWatch) => Promise<TurnOutcome>): void {
    const controller = new AbortController();
    this.controllers.add(controller);
    const watch: TurnWatch = {
      signal: controller.signal,
      onSent: ({ handle, turn }) => this.update(activity, { handle, turn }),
      onProgress: ({ phase, tools, partialAnswer }) => this.update(activity, { phase, tools: [...tools], partialAnswer }),
    };
    const done = call(watch).then(
      (outcome) => this.update(activity, { handle: outcome.handle, turn: outcome.turn, phase: 'ended', ended: { answer: outcome.answer } }),
      (err: unknown) => {
        // A turn that settled otherwise names its handle (TurnError); a start refused before one existed does not.
        const handle = err && typeof err === 'object' && 'handle' in err && typeof err.handle === 'string' ? err.handle : activity.handle;
        this.update(activity, { handle, phase: 'ended', ended: { error: errorLine(err) } });
      },
    );
    const tracked = done.finally(() => {
      this.controllers.delete(controller);
      this.calls.delete(tracked);
    });
    this.calls.add(tracked);
  }

  private update(activity: Activity, patch: Partial<Activity>): void {
    Object.assign(activity, patch);
    this.changed();
  }

  private changed(): void {
    this.version += 1;
    for (const l of this.listeners) l();
  }
}
