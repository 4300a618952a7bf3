import { Box, Text } from 'ink';
import type { HandleSummary } from '../sessions/agent-sessions.js';
import { age, pad } from './format.js';
import { statusTone, Toned } from './theme.js';

export interface HandleListProps {
  summaries: HandleSummary[];
  selected: number;
  now: number;
  stateDir?: string | undefined;
  /** Rows available for the table (the view scrolls to keep the selection visible). */
  maxRows?: number | undefined;
}

const columns = [
  ['ID', 12],
  ['NAME', 16],
  ['PROVIDER', 12],
  ['CLI', 10],
  ['STATUS', 8],
  ['LAST TURN', 18],
  ['AGE', 5],
] as const;

/** Every handle in the state directory, one per row; the selected row is highlighted. */
export function HandleList({ summaries, selected, now, stateDir, maxRows = 20 }: HandleListProps) {
  const header = columns.map(([title, width]) => pad(title, width)).join(' ');
  const rows = Math.max(1, maxRows);
  const first = Math.min(Math.max(0, selected - rows + 1), Math.max(0, summaries.length - rows));
  const visible = summaries.slice(first, first + rows);
  return (
    <Box flexDirection="column">
      <Text bold>
        cal inspect · {summaries.length} handle{summaries.length === 1 ? '' : 's'}
        {stateDir ? ` in ${stateDir}` : ''}
      </Text>
      {summaries.length === 0 ? (
        <Text>No handles yet. Start one with: cal start --provider claude-code "message"</Text>
      ) : (
        <Box flexDirection="column" marginTop={1}>
          <Toned tone="dim">{'  ' + header}</Toned>
          {visible.map(({ handle, lastTurn }, i) => {
            const index = first + i;
            const isSelected = index === selected;
            const turn = lastTurn ? `${lastTurn.status} ${age(lastTurn.updatedAt, now)}` : '-';
            return (
              <Text key={handle.id} inverse={isSelected} wrap="truncate-end">
                {isSelected ? '› ' : '  '}
                {pad(handle.id, 12)} {pad(handle.name ?? '-', 16)} {pad(handle.provider.provider, 12)} {pad(handle.provider.cli?.version ?? '-', 10)}{' '}
                <Toned tone={isSelected ? undefined : statusTone(handle.provider.status)}>{pad(handle.provider.status, 8)}</Toned>{' '}
                <Toned tone={isSelected ? undefined : statusTone(lastTurn?.status)}>{pad(turn, 18)}</Toned> {pad(age(handle.createdAt, now), 5)}
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
