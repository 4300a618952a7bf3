import { Box, Text } from 'ink';
import type { HandleView } from '../sessions/agent-sessions.js';
import type { TurnRecord } from '../state/turns.js';
import { age, certificationText, clock, eventDetail, oneLine, screenTail, splitPanes, toolLine, turnSummary } from './format.js';
import type { CertificationInfo } from './source.js';
import { statusTone, Toned } from './theme.js';

export interface HandleDetailProps {
  view: HandleView;
  /** The current pane's screen (capture-pane), or null when there is no live pane. */
  screen: string | null;
  now: number;
  /** Terminal size: sections are cut to fit instead of scrolling the terminal. */
  rows?: number | undefined;
  columns?: number | undefined;
  /** Stored certification results of the pinned CLI version (null: none known). */
  certification?: CertificationInfo[] | null | undefined;
}

const TOOLS_PER_TURN = 3;
const ARCHIVED_SHOWN = 3;

/** Line budget for the parts that grow: screen preview, turns and events. */
export function detailBudget(rows: number, archived: number): { screen: number; turns: number; events: number } {
  const fixed = 1 + 7 + 1 + 2 + (1 + Math.min(archived, ARCHIVED_SHOWN) + (archived > ARCHIVED_SHOWN ? 1 : 0)) + 2 + 2 + 2;
  const free = Math.max(9, rows - fixed);
  const screen = Math.max(3, Math.floor(free * 0.4));
  const turns = Math.max(3, Math.floor(free * 0.35));
  const events = Math.max(3, free - screen - turns);
  return { screen, turns, events };
}

/** The most recent turns whose lines (one per turn, one per tool shown) fit in `budget`. */
function fitTurns(turns: TurnRecord[], budget: number): TurnRecord[] {
  const out: TurnRecord[] = [];
  let used = 0;
  for (let i = turns.length - 1; i >= 0; i--) {
    const t = turns[i] as TurnRecord;
    const lines = 1 + Math.min(t.tools.length, TOOLS_PER_TURN) + (t.tools.length > TOOLS_PER_TURN ? 1 : 0);
    if (used + lines > budget && out.length > 0) break;
    out.unshift(t);
    used += lines;
  }
  return out;
}

/** One handle: identity, current pane with live screen, archived panes, turns, events. */
export function HandleDetail({ view, screen, now, rows = 40, columns = 100, certification = null }: HandleDetailProps) {
  const h = view.handle;
  const p = h.provider;
  const { current, archived } = splitPanes(view.panes);
  const budget = detailBudget(rows, archived.length);
  const width = Math.max(20, columns - 4);
  const shownTurns = fitTurns(view.turns, budget.turns);
  const shownEvents = view.events.slice(-budget.events);
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate-end">
        handle {h.id}
        {h.name ? ` (${h.name})` : ''} · {h.scope}
      </Text>
      <Box flexDirection="column" marginTop={1}>
        <Text wrap="truncate-end">
          provider   {p.provider} via {p.transport} · model {p.model ?? '(CLI default)'}
        </Text>
        <Text wrap="truncate-end">cwd        {h.config.workingDir.realPath}</Text>
        <Text wrap="truncate-end">
          CLI        {p.cli ? `${p.cli.version} at ${p.cli.realPath}` : '(none: API session)'}
        </Text>
        <Text wrap="truncate-end">certified  {p.cli ? certificationText(certification, now) : '-'}</Text>
        <Text wrap="truncate-end">
          native id  {p.nativeSessionId ?? '(none yet)'} · status <Toned tone={statusTone(p.status)}>{p.status}</Toned> · created{' '}
          {age(h.createdAt, now)} ago
        </Text>
      </Box>

      <Box flexDirection="column" marginTop={1}>
        {current ? (
          <Text wrap="truncate-end">
            <Text bold>current pane</Text> {current.label} ({current.launch}, started {age(current.startedAt, now)} ago){' '}
            {current.alive ? <Toned tone="good">● alive</Toned> : <Toned tone="bad">○ gone (the next continue resumes natively)</Toned>}
          </Text>
        ) : (
          <Text wrap="truncate-end">
            <Text bold>current pane</Text> none (the next continue resumes natively)
          </Text>
        )}
        {current?.alive ? (
          <Box flexDirection="column" borderStyle="round" paddingX={1}>
            {screen === null ? (
              <Toned tone="dim">(no screen)</Toned>
            ) : (
              screenTail(screen, budget.screen).map((line, i) => (
                <Text key={i} wrap="truncate-end">
                  {line.slice(0, width * 2) || ' '}
                </Text>
              ))
            )}
          </Box>
        ) : null}
      </Box>

      <Box flexDirection="column" marginTop={1}>
        <Text bold>archived panes ({archived.length})</Text>
        {archived.length === 0 ? <Toned tone="dim">  none</Toned> : null}
        {archived.slice(0, ARCHIVED_SHOWN).map((pane) => (
          <Text key={`${pane.label}:${pane.startedAt}`} wrap="truncate-end">
            {'  '}
            {pane.label} ({pane.launch}) · started {age(pane.startedAt, now)} ago · ended{' '}
            {pane.endedAt ? `${age(pane.endedAt, now)} ago (${clock(pane.endedAt)})` : '?'}: <Toned tone="warn">{pane.endReason ?? 'unknown'}</Toned>
          </Text>
        ))}
        {archived.length > ARCHIVED_SHOWN ? <Toned tone="dim">{`  … ${archived.length - ARCHIVED_SHOWN} older`}</Toned> : null}
      </Box>

      <Box flexDirection="column" marginTop={1}>
        <Text bold>
          turns ({view.turns.length}){shownTurns.length < view.turns.length ? ` · last ${shownTurns.length}` : ''}
        </Text>
        {view.turns.length === 0 ? <Toned tone="dim">  none</Toned> : null}
        {shownTurns.map((t) => (
          <Box key={t.id} flexDirection="column">
            <Text wrap="truncate-end">
              {'  '}
              {t.id} <Toned tone={statusTone(t.status)}>{t.status.padEnd(11)}</Toned> {oneLine(t.message, 30)} → {turnSummary(t, 60)}
            </Text>
            {t.tools.slice(0, TOOLS_PER_TURN).map((tool, i) => (
              <Text key={i} wrap="truncate-end">
                {'      ⚙ '}
                {toolLine(tool, width)}
              </Text>
            ))}
            {t.tools.length > TOOLS_PER_TURN ? <Toned tone="dim">{`      … ${t.tools.length - TOOLS_PER_TURN} more tool calls`}</Toned> : null}
          </Box>
        ))}
      </Box>

      <Box flexDirection="column" marginTop={1}>
        <Text bold>
          events (UTC){shownEvents.length < view.events.length ? ` · last ${shownEvents.length} of ${view.events.length}` : ''}
        </Text>
        {view.events.length === 0 ? <Toned tone="dim">  none</Toned> : null}
        {shownEvents.map((e, i) => (
          <Text key={i} wrap="truncate-end">
            {'  '}
            {clock(e.time)} <Toned tone={statusTone(e.event) ?? (e.event === 'lost_tmux' || e.event === 'resuming' ? 'warn' : undefined)}>{e.event}</Toned>
            {e.turn ? ` ${e.turn}` : ''}
            {eventDetail(e) ? ` ${oneLine(eventDetail(e), width)}` : ''}
          </Text>
        ))}
      </Box>
    </Box>
  );
}
