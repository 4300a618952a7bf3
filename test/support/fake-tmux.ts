import { readFileSync } from 'node:fs';
import type { TmuxControl } from '../../src/engine/tmux-control.js';
import type { OwnPane, PaneInfo, PaneListing, PaneSpec, PaneState } from '../../src/tmux/tmux.js';
import type { PaneScreen } from '../../src/tmux/screen.js';
import type { FakeCli } from './fake-engine.js';

/** One pane of the fake tmux (test/support/fake-engine.ts): its "CLI" is the fake CLI. */
export interface FakePane {
  id: string;
  session: string;
  pid: number;
  argv: string[];
  dead: boolean;
  pasted: string[];
  keys: string[][];
  /** Terminals attached to the pane's session now, and when one last was (epoch seconds). */
  clients?: number;
  lastAttached?: number | null;
  /** What stands in the fake CLI's input box (a person's draft, a paste not yet submitted). */
  box?: string;
}

/** The CLI argv a pane command runs: through cal's launch script (`/bin/sh <script>`), or as is. */
function launchedArgv(argv: string[]): string[] {
  if (argv[0] !== '/bin/sh' || argv.length !== 2) return argv;
  const script = readFileSync(argv[1] as string, 'utf8');
  const exec = script.split('\n').find((l) => l.startsWith('exec ')) ?? '';
  const out: string[] = [];
  for (const m of exec.slice(5).matchAll(/'((?:[^']|'\\'')*)'/g)) out.push((m[1] as string).replace(/'\\''/g, "'"));
  return out;
}

export class FakeTmux implements TmuxControl {
  panes: FakePane[] = [];
  killedSessions: string[] = [];
  private nextPane = 0;
  // Above the largest pid Linux can hand out (2^22): a fake pane's process never exists, so
  // the engine asks the fake tmux about it on every check, unless a test gives it a real one.
  private nextPid = 4_194_304 + 1;
  /** The pid of the next pane's "CLI": a real process of the test's, to stand for the pane's own. */
  nextPaneProcess: number | null = null;
  /** How often paneState was asked. */
  paneStateCalls = 0;

  constructor(
    readonly socket: string,
    private readonly cli: FakeCli,
  ) {}

  async newPane(spec: PaneSpec): Promise<PaneInfo> {
    const argv = launchedArgv(spec.argv);
    spec = { ...spec, argv };
    const pid = this.nextPaneProcess ?? this.nextPid++;
    this.nextPaneProcess = null;
    const pane: FakePane = { id: `%${this.nextPane++}`, session: spec.session, pid, argv: spec.argv, dead: false, pasted: [], keys: [] };
    this.panes.push(pane);
    this.cli.attach(pane, spec.argv[2] as string);
    // argv: [exe, mode, sessionId, message?]: a launch that carries the message delivers it.
    const message = spec.argv[3];
    if (message !== undefined) this.cli.receive(message, pane, spec.argv[2] as string);
    return { session: pane.session, paneId: pane.id, pid: pane.pid };
  }

  private find(paneId: string): FakePane | undefined {
    return this.panes.filter((p) => p.id === paneId).at(-1);
  }

  async paneState(paneId: string): Promise<PaneState> {
    this.paneStateCalls++;
    const pane = this.find(paneId);
    if (!pane) return { exists: false, dead: true, deadStatus: null };
    return { exists: true, dead: pane.dead, deadStatus: pane.dead ? 1 : null, session: pane.session, pid: pane.pid };
  }

  /** How many characters one Ctrl-U deletes from the end of the box (Claude Code: one wrapped row). */
  ctrlUDeletes = Infinity;

  async paste(paneId: string, text: string, submit = true): Promise<void> {
    const pane = this.find(paneId);
    if (!pane || pane.dead) throw new Error(`no live pane ${paneId}`);
    pane.pasted.push(text);
    pane.box = (pane.box ?? '') + text;
    if (submit) this.submit(pane);
  }

  /** The next Enter is lost (a TUI busy redrawing): the message stays in the box. */
  swallowNextSubmit = false;

  /** Enter: the box goes to the CLI as one message, whatever stood there before the paste. */
  private submit(pane: FakePane): void {
    if (this.swallowNextSubmit) {
      this.swallowNextSubmit = false;
      return;
    }
    const message = pane.box ?? '';
    pane.box = '';
    if (message) this.cli.receive(message, pane, this.cli.sessionOf(pane));
  }

  /** As the real one: pasted only into the pane `own` names (same session and process), alive. */
  async pasteIfOwn(own: OwnPane, text: string, submit = true): Promise<boolean> {
    const pane = this.find(own.paneId);
    if (!pane || pane.dead || pane.session !== own.session || (own.pid !== undefined && pane.pid !== own.pid)) return false;
    await this.paste(own.paneId, text, submit);
    return true;
  }

  async sendKeys(paneId: string, keys: string[]): Promise<void> {
    const pane = this.find(paneId);
    pane?.keys.push(keys);
    for (const key of pane ? keys : []) {
      if (key === 'C-u') pane!.box = (pane!.box ?? '').slice(0, Math.max(0, (pane!.box ?? '').length - this.ctrlUDeletes));
      if (key === 'Enter' && pane!.box) this.submit(pane!);
    }
    if (pane && keys.includes('Escape')) this.cli.interrupt(pane);
    else if (pane) this.cli.pressed(pane, keys);
  }

  async capture(): Promise<string> {
    return 'fake screen';
  }

  /** How the box draws what it holds (a TUI may draw a stand-in for a long paste). */
  drawBox: (box: string) => string = (box) => box;

  /** A dialog over the fake CLI (its rows stand in for the input box while set). */
  dialog: string[] | null = null;

  /** The fake CLI's screen: its input box, one row opening with `> `, or a dialog. */
  async screen(paneId: string): Promise<PaneScreen | null> {
    const pane = this.find(paneId);
    if (!pane || pane.dead) return null;
    if (this.dialog) return { lines: ['fake screen', ...this.dialog], cursor: { x: 0, y: this.dialog.length, visible: false } };
    const shown = this.drawBox(pane.box ?? '');
    return { lines: ['fake screen', `> ${shown}`], cursor: { x: 2 + shown.length, y: 1, visible: true } };
  }

  async killSession(session: string): Promise<boolean> {
    this.killedSessions.push(session);
    let killed = false;
    for (const p of this.panes) {
      if (p.session === session && !p.dead) {
        p.dead = true;
        killed = true;
      }
    }
    this.panes = this.panes.filter((p) => p.session !== session);
    return killed;
  }

  async listPanes(): Promise<PaneListing[]> {
    return this.panes.map((p) => ({ session: p.session, paneId: p.id, pid: p.pid, dead: p.dead, clients: p.clients ?? 0, lastAttached: p.lastAttached ?? null }));
  }

  async killServer(): Promise<void> {
    this.panes = [];
  }

  /** A new tmux server: every pane gone, and pane ids start again at %0. */
  restartServer(): void {
    this.panes = [];
    this.nextPane = 0;
  }
}

