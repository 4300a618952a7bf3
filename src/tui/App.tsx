import { useCallback, useEffect, useRef, useState } from 'react';
import { Box, Text, useApp, useInput, useStdout } from 'ink';
import type { HandleSummary, HandleView } from '../sessions/agent-sessions.js';
import { HandleDetail } from './HandleDetail.js';
import { HandleList } from './HandleList.js';
import type { CertificationInfo, InspectSource, TuiPlace } from './source.js';
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
}

function message(err: unknown): string {
  if (err && typeof err === 'object' && 'kind' in err && 'message' in err) return `${String(err.kind)}: ${String(err.message)}`;
  return err instanceof Error ? err.message : String(err);
}

/** The inspect TUI: the handle list and one handle's detail, refreshed while open. */
export function App({ source, initial, stateDir, pollMs = 1000, onAttach, clock = Date.now, initialNotice = null }: AppProps) {
  const { exit } = useApp();
  const { stdout } = useStdout();
  const [size, setSize] = useState({ rows: stdout.rows || 40, columns: stdout.columns || 100 });
  const [mode, setMode] = useState(initial.mode);
  const [ref, setRef] = useState<string | null>(initial.ref);
  const [selected, setSelected] = useState(initial.selected);
  const [summaries, setSummaries] = useState<HandleSummary[] | null>(null);
  const [view, setView] = useState<HandleView | null>(null);
  const [screen, setScreen] = useState<string | null>(null);
  const [certification, setCertification] = useState<CertificationInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(initialNotice);
  const [now, setNow] = useState(clock());
  const [tick, setTick] = useState(0);
  const busy = useRef(false);

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
          setSelected((s) => Math.min(s, Math.max(0, list.length - 1)));
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
        if (alive) setError(message(err));
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

  const attach = useCallback(async () => {
    if (!ref) return;
    try {
      const argv = view?.currentPaneAlive === false ? null : await source.attachCommand(ref);
      if (!argv) {
        setNotice('no live pane to attach to: the next cal continue resumes the session natively');
        return;
      }
      onAttach?.(argv, { mode, ref, selected });
      exit();
    } catch (err) {
      setNotice(`cannot attach: ${message(err)}`);
    }
  }, [ref, view, source, onAttach, mode, selected, exit]);

  useInput((input, key) => {
    setNotice(null);
    if (input === 'q') {
      exit();
      return;
    }
    if (input === 'r') {
      setTick((t) => t + 1);
      return;
    }
    if (mode === 'list') {
      const count = summaries?.length ?? 0;
      if (key.upArrow || input === 'k') setSelected((s) => Math.max(0, s - 1));
      else if (key.downArrow || input === 'j') setSelected((s) => Math.min(Math.max(0, count - 1), s + 1));
      else if (key.return) {
        const chosen = summaries?.[selected];
        if (chosen) {
          setView(null);
          setScreen(null);
          setRef(chosen.handle.id);
          setMode('detail');
        }
      }
      return;
    }
    if (input === 'a') void attach();
    else if (key.escape || key.leftArrow || key.backspace || key.delete) {
      setMode('list');
      setError(null);
    }
  });

  const shown = view && ref && (view.handle.id === ref || view.handle.name === ref) ? view : null;
  const footer =
    mode === 'list' ? '↑/↓ move · enter open · r refresh · q quit' : 'a attach (detach with C-b d) · esc list · r refresh · q quit';
  return (
    <Box flexDirection="column">
      {mode === 'list' ? (
        summaries ? (
          <HandleList summaries={summaries} selected={selected} now={now} stateDir={stateDir} maxRows={size.rows - 7} />
        ) : (
          <Text>loading handles…</Text>
        )
      ) : shown ? (
        <HandleDetail view={shown} screen={screen} now={now} rows={size.rows - 3} columns={size.columns} certification={certification} />
      ) : error ? null : (
        <Text>loading {ref}…</Text>
      )}
      {error ? <Toned tone="bad">{`cal: ${error}`}</Toned> : null}
      {notice ? <Toned tone="warn">{notice}</Toned> : null}
      <Box marginTop={1}>
        <Toned tone="dim">{footer}</Toned>
      </Box>
    </Box>
  );
}
