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

/** Widths that fit an 80-column terminal with the selection marker (2 + 76). */
const columns = [
  ['ID', 10],
  ['NAME', 14],
  ['PROVIDER', 11],
  ['CLI', 9],
  ['STATUS', 8],
  ['LAST TURN', 14],
  ['AGE', 4],
] as const;
const [idW, nameW, providerW, cliW, statusW, turnW, ageW] = columns.map(([, width]) => width) as [number, number, number, number, number, number, number];

/** Every handle in the state directory, one per row; the selected row is highlighted. */
export function HandleList({ summaries, selected, now, stateDir, maxRows = 20 }: HandleListProps) {
  const header = columns.map(([title, width]) => pad(title, width)).join(' ');
  const rows = Math.max(1, maxRows);
  const first = Math.min(Math.max(0, selected - rows + 1), Math.max(0, summaries.length - rows));
  const visible = summaries.slice(first, first + rows);
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate-end">
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
                {pad(handle.id, idW)} {pad(handle.name ?? '-', nameW)} {pad(handle.provider.provider, providerW)} {pad(handle.provider.cli?.version ?? '-', cliW)}{' '}
                <Toned tone={isSelected ? undefined : statusTone(handle.provider.status)}>{pad(handle.provider.status, statusW)}</Toned>{' '}
                <Toned tone={isSelected ? undefined : statusTone(lastTurn?.status)}>{pad(turn, turnW)}</Toned> {pad(age(handle.createdAt, now), ageW)}
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
