import { render } from 'ink';
import { Actions } from './actions.js';
import { App } from './App.js';
import { colorEnabled } from './format.js';
import type { InspectSource, TuiPlace } from './source.js';
import { BRACKETED_PASTE_OFF, BRACKETED_PASTE_ON, KeyReader } from './key-reader.js';
import { ColorContext } from './theme.js';
import { spawnChild } from '../util/spawn.js';

export interface TuiOptions {
  source: InspectSource;
  /** A handle to open at once; otherwise the list. */
  ref?: string | undefined;
  stateDir?: string | undefined;
  pollMs?: number;
}

const ENTER_ALT_SCREEN = '\x1b[?1049h\x1b[2J\x1b[H';
const LEAVE_ALT_SCREEN = '\x1b[?1049l';

/**
 * Runs the inspect TUI on the terminal until `q`. The actions run in this process, through the
 * library (the source). Attaching unmounts Ink (raw mode off, stdin
 * released), runs `tmux attach` on the same terminal, and mounts the TUI again at the same
 * place once tmux detaches. Returns the exit code.
 */
export async function runTui(opts: TuiOptions): Promise<number> {
  let place: TuiPlace = { mode: opts.ref ? 'detail' : 'list', ref: opts.ref ?? null, selected: 0 };
  const out = process.stdout;
  let notice: string | null = null;
  // The turns sent from the view go on while tmux is attached, and are shown again after.
  const actions = new Actions(opts.source);
  try {
    for (;;) {
      out.write(ENTER_ALT_SCREEN + BRACKETED_PASTE_ON);
      // Keys one at a time, pastes whole (key-reader.ts); a reader per mount, as Ink's own.
      const keys = new KeyReader(process.stdin);
      const request: { argv: string[] | null } = { argv: null };
      const instance = render(
        <ColorContext.Provider value={colorEnabled()}>
          <App
            source={opts.source}
            initial={place}
            stateDir={opts.stateDir}
            pollMs={opts.pollMs}
            initialNotice={notice}
            actions={actions}
            onAttach={(argv, at) => {
              request.argv = argv;
              place = at;
            }}
          />
        </ColorContext.Provider>,
        { exitOnCtrlC: true, patchConsole: false, stdin: keys as unknown as NodeJS.ReadStream },
      );
      await instance.waitUntilExit();
      instance.cleanup();
      keys.destroy();
      out.write(BRACKETED_PASTE_OFF);
      if (!request.argv) {
        // Quit (q, Ctrl-C) with turns sent from here in flight: each is cancelled (as Ctrl-C
        // cancels cal continue) and settled before cal exits, so none is left for cal recover.
        if (actions.inFlight() > 0) {
          out.write(LEAVE_ALT_SCREEN);
          process.stderr.write(`cal: cancelling ${actions.inFlight()} turn(s) sent from the view\n`);
        }
        await actions.cancelAll();
        return 0;
      }
      const code = await runAttached(request.argv);
      notice = code === 0 ? null : `tmux attach ended with status ${code}`;
    }
  } finally {
    out.write(BRACKETED_PASTE_OFF + LEAVE_ALT_SCREEN);
  }
}

/** Runs tmux attach on this terminal and waits for it to detach (or fail); its exit status. */
function runAttached(argv: string[]): Promise<number> {
  // cal's tmux server is not the one the user may be sitting in: attaching from inside tmux is
  // a deliberate nesting, so tmux's own guard variable is dropped for the child.
  const env = { ...process.env };
  delete env.TMUX;
  delete env.TMUX_PANE;
  return new Promise((resolve) => {
    const [cmd, ...args] = argv;
    if (!cmd) return resolve(127);
    // The user's terminal, attached: stdio is cal's own.
    const child = spawnChild(cmd, args, { stdio: 'inherit', env });
    child.on('error', () => resolve(127));
    child.on('exit', (code) => resolve(code ?? 1));
  });
}
