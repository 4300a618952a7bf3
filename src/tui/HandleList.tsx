import { Box, Text } from 'ink';
import type { HandleSummary } from '../sessions/agent-sessions.js';
import { age, lastActivity, pad, paneText, shownStatus } from './format.js';
import { statusTone, Toned } from './theme.js';

export interface HandleListProps {
  summaries: HandleSummary[];
  selected: number;
  now: number;
  stateDir?: string | undefined;
  /** Rows available for the table (the view scrolls to keep the selection visible). */
  maxRows?: number | undefined;
  /** The `/` filter the rows passed, and how many handles there are in all. */
  filter?: string | undefined;
  total?: number | undefined;
}

/** Widths that fit an 80-column terminal with the selection marker (2 + 78). */
const columns = [
  ['ID', 10],
  ['NAME', 9],
  ['PROVIDER', 11],
  ['VIA', 10],
  ['STATUS', 6],
  ['LAST TURN', 14],
  ['CWD', 12],
] as const;
const [idW, nameW, providerW, viaW, statusW, turnW, cwdW] = columns.map(([, width]) => width) as [number, number, number, number, number, number, number];

/** The end of a path, which tells working directories apart (`…/api`). */
function pathTail(p: string, width: number): string {
  const chars = Array.from(p);
  return chars.length <= width ? p : `…${chars.slice(chars.length - width + 1).join('')}`;
}

/** VIA: the transport, and for a pane whether it is alive. */
function via(s: HandleSummary): string {
  const pane = paneText(s);
  return pane === '-' ? s.handle.provider.transport : `tmux ${pane}`;
}

/** Every handle in the state directory, one per row; the selected row is highlighted. */
export function HandleList({ summaries, selected, now, stateDir, maxRows = 20, filter = '', total = summaries.length }: HandleListProps) {
  const header = columns.map(([title, width]) => pad(title, width)).join(' ');
  const rows = Math.max(1, maxRows);
  const first = Math.min(Math.max(0, selected - rows + 1), Math.max(0, summaries.length - rows));
  const visible = summaries.slice(first, first + rows);
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate-end">
        cal inspect · {filter ? `${summaries.length} of ` : ''}
        {total} handle{total === 1 ? '' : 's'}
        {filter ? ` matching ${JSON.stringify(filter)}` : ''}
        {stateDir ? ` in ${stateDir}` : ''}
      </Text>
      {summaries.length === 0 && filter ? (
        <Text>No handle matches the filter (/ changes it, esc in the filter clears it).</Text>
      ) : summaries.length === 0 ? (
        <Text>No handles yet. Start one with n, or: cal start --provider claude-code "message"</Text>
      ) : (
        <Box flexDirection="column" marginTop={1}>
          <Toned tone="dim">{'  ' + header}</Toned>
          {visible.map((s, i) => {
            const { handle, lastTurn } = s;
            const index = first + i;
            const isSelected = index === selected;
            // The last turn's status and how long ago it last changed (UPDATED of the plain listing).
            const turn = lastTurn ? `${lastTurn.status} ${age(lastActivity(s), now)}` : '-';
            const status = shownStatus(s);
            return (
              <Text key={handle.id} inverse={isSelected} wrap="truncate-end">
                {isSelected ? '› ' : '  '}
                {pad(handle.id, idW)} {pad(handle.name ?? '-', nameW)} {pad(handle.provider.provider, providerW)} {pad(via(s), viaW)}{' '}
                <Toned tone={isSelected ? undefined : statusTone(status)}>{pad(status, statusW)}</Toned>{' '}
                <Toned tone={isSelected ? undefined : statusTone(lastTurn?.status)}>{pad(turn, turnW)}</Toned> {pad(pathTail(handle.config.workingDir.realPath, cwdW), cwdW)}
              </Text>
            );
          })}
          {summaries.length > visible.length ? (
            <Toned tone="dim">
              {`  rows ${first + 1}-${first + visible.length} of ${summaries.length}`}
            </Toned>
          ) : null}
        </Box>
      )}
    </Box>
  );
}
