import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import { Box, Text, useApp, useInput, useStdout } from 'ink';
import type { HandleSummary, HandleView } from '../sessions/agent-sessions.js';
import { Actions, errorLine } from './actions.js';
import { ActivityView } from './ActivityView.js';
import { HandleDetail } from './HandleDetail.js';
import { HandleList } from './HandleList.js';
import { detailFooter, filtered, listFooter, targetOfSummary, targetOfView, type Target } from './keys.js';
import { NewSessionForm } from './NewSessionForm.js';
import { OverlayKeysContext, type ClaimKeys, type KeyHandler } from './overlay-keys.js';
import { Confirm, LineInput } from './Prompt.js';
import type { CertificationInfo, InspectSource, NewSessionRequest, TuiPlace } from './source.js';
import { Toned } from './theme.js';

export interface AppProps {
  source: InspectSource;
  initial: TuiPlace;
  stateDir?: string | undefined;
  /** How often the open view is read again (ms). */
  pollMs?: number;
  /** Called with tmux's argv when the user asks to attach; the app exits right after. */
  onAttach?: (argv: string[], place: TuiPlace) => void;
  clock?: () => number;
  /** A line to show until the next key (e.g. how the last attach ended). */
  initialNotice?: string | null;
  /** The turns sent from here; kept by the caller so they outlive an attach (default: the app's own). */
  actions?: Actions;
  /** The directory `n` offers when nothing is selected. */
  defaultCwd?: string;
}

/** What is open over the view and takes the keys: an input, a question, the new-session form. */
type Overlay = { kind: 'send'; target: Target } | { kind: 'remove'; target: Target } | { kind: 'filter' } | { kind: 'new'; initial: NewSessionRequest } | null;

interface Notice {
  text: string;
  tone: 'good' | 'bad' | 'warn';
}

/** The inspect TUI: the handle list and one handle's detail, refreshed while open, and the actions on them. */
export function App({ source, initial, stateDir, pollMs = 1000, onAttach, clock = Date.now, initialNotice = null, actions: given, defaultCwd = process.cwd() }: AppProps) {
  const { exit } = useApp();
  const { stdout } = useStdout();
  const actions = useMemo(() => given ?? new Actions(source, clock), [given, source, clock]);
  useSyncExternalStore(actions.subscribe, actions.snapshot);
  const [size, setSize] = useState({ rows: stdout.rows || 40, columns: stdout.columns || 100 });
  const [mode, setMode] = useState(initial.mode);
  const [ref, setRef] = useState<string | null>(initial.ref);
  const [selected, setSelected] = useState(initial.selected);
  const [summaries, setSummaries] = useState<HandleSummary[] | null>(null);
  const [view, setView] = useState<HandleView | null>(null);
  const [screen, setScreen] = useState<string | null>(null);
  const [certification, setCertification] = useState<CertificationInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<Notice | null>(initialNotice ? { text: initialNotice, tone: 'warn' } : null);
  const [overlay, setShownOverlay] = useState<Overlay>(null);
  // Set at once, not at the next render: keys typed right after `s` are never read as commands.
  const overlayOpen = useRef(false);
  // The open overlay's key handler once it is drawn (useOverlayKeys), and the keys read before.
  const overlayKeys = useRef<KeyHandler | null>(null);
  const keysBeforeDrawn = useRef<Parameters<KeyHandler>[]>([]);
  const setOverlay = useCallback((next: Overlay) => {
    overlayOpen.current = next !== null;
    overlayKeys.current = null;
    keysBeforeDrawn.current = [];
    setShownOverlay(next);
  }, []);
  const claimKeys = useCallback<ClaimKeys>((handler) => {
    overlayKeys.current = handler;
    for (const [input, key] of keysBeforeDrawn.current.splice(0)) if (overlayKeys.current === handler) handler(input, key);
    return () => {
      if (overlayKeys.current === handler) overlayKeys.current = null;
    };
  }, []);
  const [filter, setFilter] = useState('');
  const [quitArmed, setQuitArmed] = useState(false);
  const [now, setNow] = useState(clock());
  const [tick, setTick] = useState(0);
  const busy = useRef(false);
  const refresh = useCallback(() => setTick((t) => t + 1), []);

  // A turn sent from here ended: its handle's row is read again now, not at the next poll.
  const endedHere = actions.ended();
  useEffect(() => {
    if (endedHere > 0) refresh();
  }, [endedHere, refresh]);

  useEffect(() => {
    const onResize = () => setSize({ rows: stdout.rows || 40, columns: stdout.columns || 100 });
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout]);

  // Read the open view now and then every pollMs; a read still running is not started twice.
  useEffect(() => {
    let alive = true;
    const load = async () => {
      if (busy.current) return;
      busy.current = true;
      try {
        if (mode === 'list') {
          const list = await source.list();
          if (!alive) return;
          setSummaries(list);
        } else if (ref) {
          const [v, s] = await Promise.all([source.describe(ref), source.screen(ref).catch(() => null)]);
          const cli = v.handle.provider.cli;
          const c = cli && source.certification ? await source.certification(v.handle.provider.provider, cli.version).catch(() => null) : null;
          if (!alive) return;
          setView(v);
          setScreen(s);
          setCertification(c);
        }
        setError(null);
      } catch (err) {
        if (alive) setError(errorLine(err));
      } finally {
        busy.current = false;
        if (alive) setNow(clock());
      }
    };
    void load();
    const timer = setInterval(() => void load(), pollMs);
    return () => {
      alive = false;
      clearInterval(timer);
    };
  }, [mode, ref, source, pollMs, clock, tick]);

  const rows = useMemo(() => (summaries ? filtered(summaries, filter) : null), [summaries, filter]);
  const row = Math.min(selected, Math.max(0, (rows?.length ?? 0) - 1));
  const shown = view && ref && (view.handle.id === ref || view.handle.name === ref) ? view : null;
  const target: Target | null = mode === 'list' ? (rows?.[row] ? targetOfSummary(rows[row]) : null) : shown ? targetOfView(shown) : null;

  const attach = useCallback(
    async (id: string, alive: boolean) => {
      try {
        const argv = alive ? await source.attachCommand(id) : null;
        if (!argv) {
          setNotice({ text: 'no live pane to attach to: the next cal continue resumes the session natively', tone: 'warn' });
          return;
        }
        onAttach?.(argv, { mode, ref, selected: row });
        exit();
      } catch (err) {
        setNotice({ text: `cannot attach: ${errorLine(err)}`, tone: 'bad' });
      }
    },
    [source, onAttach, mode, ref, row, exit],
  );

  /** One library call that answers with a line (cancel, kill, remove): its line, or its error as cal prints it. */
  const act = useCallback(
    (doing: string, call: () => Promise<string>, after?: () => void) => {
      setNotice({ text: doing, tone: 'warn' });
      call().then(
        (line) => {
          setNotice({ text: line, tone: 'good' });
          after?.();
          refresh();
        },
        (err: unknown) => setNotice({ text: `cal: ${errorLine(err)}`, tone: 'bad' }),
      );
    },
    [refresh],
  );

  // The keys go to the latest render's handler (a key can come before the effects of the render
  // that showed what it acts on ran). The app's is Ink's only input listener: while an overlay
  // is open, the overlay's handler takes each key (overlay-keys.ts).
  const onKey = useRef<KeyHandler>(() => {});
  useInput(useCallback<KeyHandler>((input, key) => onKey.current(input, key), []));
  onKey.current = (input, key) => {
    if (overlayOpen.current) {
      if (overlayKeys.current) overlayKeys.current(input, key);
      else keysBeforeDrawn.current.push([input, key]);
      return;
    }
    setNotice(null);
    if (input !== 'q') setQuitArmed(false);
    if (input === 'q') {
      const running = actions.inFlight();
      if (running > 0 && !quitArmed) {
        setQuitArmed(true);
        setNotice({ text: `${running} turn${running === 1 ? '' : 's'} sent from here still running: q again cancels ${running === 1 ? 'it' : 'them'} and quits`, tone: 'warn' });
        return;
      }
      void actions.cancelAll();
      exit();
      return;
    }
    if (input === 'r') return refresh();
    if (input === 'n') {
      setOverlay({ kind: 'new', initial: { provider: target?.provider ?? source.providers[0] ?? '', cwd: target?.cwd ?? defaultCwd, message: '' } });
      return;
    }
    if (input === '/') {
      setMode('list');
      setOverlay({ kind: 'filter' });
      return;
    }
    if (target) {
      if (input === 's') {
        const running = actions.of(target.id);
        // A turn sent from here that has ended is over, even where the list, read before it
        // ended, still has it in flight (until the next read).
        const recorded = running?.ended && running.turn === target.busyTurn ? null : target.busyTurn;
        const turn = recorded ?? (running && !running.ended ? (running.turn ?? 'being sent') : null);
        if (turn) setNotice({ text: `${target.label} is busy: turn ${turn} is in flight (c cancels it)`, tone: 'warn' });
        else setOverlay({ kind: 'send', target });
        return;
      }
      if (input === 'c') return act(`cancelling the turn on ${target.label}…`, () => source.cancel(target.id));
      if (input === 'k') return act(`killing the pane of ${target.label}…`, () => source.killPane(target.id));
      if (input === 'd') return setOverlay({ kind: 'remove', target });
      if (input === 'a') {
        const alive = mode === 'list' ? (rows?.[row]?.paneAlive ?? false) : shown?.currentPaneAlive !== false;
        void attach(target.id, alive);
        return;
      }
    }
    if (mode === 'list') {
      const count = rows?.length ?? 0;
      if (key.upArrow) setSelected(Math.max(0, row - 1));
      else if (key.downArrow) setSelected(Math.min(Math.max(0, count - 1), row + 1));
      else if (key.return && target) {
        setView(null);
        setScreen(null);
        setRef(target.id);
        setMode('detail');
      }
      return;
    }
    if (key.escape || key.leftArrow || key.backspace || key.delete) {
      setMode('list');
      setError(null);
    }
  };

  const closeOverlay = () => setOverlay(null);
  const activity = target ? actions.of(target.id) : undefined;
  const starting = actions.starting();
  const activityLines = (activity ? 5 : 0) + starting.length;
  const footer = mode === 'list' ? listFooter : detailFooter;
  return (
    <OverlayKeysContext.Provider value={claimKeys}>
      <Box flexDirection="column">
        {mode === 'list' ? (
          rows ? (
            <HandleList summaries={rows} selected={row} now={now} stateDir={stateDir} maxRows={size.rows - 9 - activityLines} filter={filter} total={summaries?.length} />
          ) : (
            <Text>loading handles…</Text>
          )
        ) : shown ? (
          <HandleDetail view={shown} screen={screen} now={now} rows={size.rows - 5 - activityLines} columns={size.columns} certification={certification} />
        ) : error ? null : (
          <Text>loading {ref}…</Text>
        )}
        {activity ? <ActivityView activity={activity} now={now} columns={size.columns} /> : null}
        {starting.map((a, i) => (
          <ActivityView key={i} activity={a} now={now} lines={1} columns={size.columns} />
        ))}
        {error ? <Toned tone="bad">{`cal: ${error}`}</Toned> : null}
        {notice ? <Toned tone={notice.tone}>{notice.text}</Toned> : null}
        {overlay?.kind === 'send' ? (
          <LineInput
            label={`message to ${overlay.target.label}: `}
            hint="enter sends (cal continue) · esc cancels"
            onCancel={closeOverlay}
            onSubmit={(message) => {
              closeOverlay();
              actions.send(overlay.target.id, message);
            }}
          />
        ) : null}
        {overlay?.kind === 'filter' ? (
          <LineInput
            label="filter: "
            initial={filter}
            hint="id, name, provider, status or directory · enter keeps it · esc clears it"
            onChange={(text) => {
              setFilter(text);
              setSelected(0);
            }}
            onSubmit={closeOverlay}
            onCancel={() => {
              setFilter('');
              closeOverlay();
            }}
          />
        ) : null}
        {overlay?.kind === 'remove' ? (
          <Confirm
            question={`remove ${overlay.target.label}? its panes end and cal's records of it go (the CLI's transcript stays)`}
            onAnswer={(yes) => {
              const { target: removed } = overlay;
              closeOverlay();
              if (!yes) return setNotice({ text: `kept ${removed.label}`, tone: 'warn' });
              act(`removing ${removed.label}…`, () => source.remove(removed.id), () => setMode('list'));
            }}
          />
        ) : null}
        {overlay?.kind === 'new' ? (
          <NewSessionForm
            initial={overlay.initial}
            providers={source.providers}
            onCancel={closeOverlay}
            onSubmit={(request) => {
              closeOverlay();
              setMode('list');
              actions.start(request);
            }}
          />
        ) : null}
        <Box marginTop={1} flexDirection="column">
          {footer.map((line) => (
            <Toned key={line} tone="dim">
              {line}
            </Toned>
          ))}
        </Box>
      </Box>
    </OverlayKeysContext.Provider>
  );
}
