import { createContext, useContext, type ReactNode } from 'react';
import { Text } from 'ink';
import type { TurnStatus } from '../state/turns.js';

/** Whether colour is on (off with NO_COLOR); the views read it from here. */
export const ColorContext = createContext(true);

type Tone = 'good' | 'bad' | 'warn' | 'busy' | 'dim' | 'accent';
const palette: Record<Tone, string> = { good: 'green', bad: 'red', warn: 'yellow', busy: 'cyan', dim: 'gray', accent: 'blue' };

/** Text in a tone; plain (bold kept) when colour is off. */
export function Toned(props: { tone?: Tone | undefined; bold?: boolean; children: ReactNode }) {
  const color = useContext(ColorContext);
  return (
    <Text color={color && props.tone ? palette[props.tone] : undefined} bold={props.bold}>
      {props.children}
    </Text>
  );
}

export function statusTone(status: TurnStatus | string | undefined): Tone | undefined {
  switch (status) {
    case 'completed':
    case 'idle':
      return 'good';
    case 'failed':
    case 'lost':
    case 'closed':
      return 'bad';
    case 'interrupted':
    case 'waiting_for_lock':
    case 'queued':
      return 'warn';
    case 'sending':
    case 'running':
    case 'active':
      return 'busy';
    default:
      return undefined;
  }
}
