import { Box, Text } from 'ink';
import type { Activity } from './actions.js';
import { elapsed, oneLine, toolLine } from './format.js';
import { Toned } from './theme.js';

export interface ActivityViewProps {
  activity: Activity;
  now: number;
  /** Lines of the answer (or of the text so far) shown at most. */
  lines?: number;
  columns?: number;
}

/** The last `count` lines of a text, without the blank ones at its end. */
function lastLines(text: string, count: number): string[] {
  const lines = text.replace(/\s+$/, '').split('\n');
  return lines.slice(Math.max(0, lines.length - count));
}

/**
 * A turn sent from the TUI: while it runs, its phase, time, tools and the text so far (as the
 * CLI records them); once it ended, the answer or the error as `cal` prints it.
 */
export function ActivityView({ activity: a, now, lines = 4, columns = 100 }: ActivityViewProps) {
  const width = Math.max(20, columns - 4);
  const who = a.handle ? `${a.handle}${a.turn ? ` ${a.turn}` : ''}` : 'new session';
  const verb = a.kind === 'start' ? 'started' : 'sent';
  if (a.ended && 'error' in a.ended) {
    return (
      <Text wrap="truncate-end">
        <Toned tone="bad">✗ {who}:</Toned> cal: {a.ended.error}
      </Text>
    );
  }
  if (a.ended) {
    const answer = a.ended.answer ?? '(no answer text)';
    return (
      <Box flexDirection="column">
        <Text wrap="truncate-end">
          <Toned tone="good">✓ answer from {who}</Toned> <Toned tone="dim">{`(${verb}: ${oneLine(a.message, 40)})`}</Toned>
        </Text>
        {lastLines(answer, lines).map((line, i) => (
          <Text key={i} wrap="truncate-end">
            {'  '}
            {line.slice(0, width * 2) || ' '}
          </Text>
        ))}
      </Box>
    );
  }
  const last = a.tools.at(-1);
  return (
    <Box flexDirection="column">
      <Text wrap="truncate-end">
        <Toned tone="busy">
          … {who} {a.phase} · {elapsed(now - a.startedAt)}
        </Toned>
        {a.tools.length > 0 ? ` · ${a.tools.length} tool${a.tools.length === 1 ? '' : 's'}` : ''}
        {last ? ` · ⚙ ${toolLine(last, 60)}` : ''} <Toned tone="dim">{`(${verb}: ${oneLine(a.message, 40)})`}</Toned>
      </Text>
      {a.partialAnswer
        ? lastLines(a.partialAnswer, Math.max(1, lines - 1)).map((line, i) => (
            <Text key={i} wrap="truncate-end">
              {'  '}
              {line.slice(0, width * 2) || ' '}
            </Text>
          ))
        : null}
    </Box>
  );
}
