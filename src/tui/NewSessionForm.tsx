import { useRef, useState } from 'react';
import { Box, Text } from 'ink';
import { useOverlayKeys } from './overlay-keys.js';
import { beforeEnter, editLine } from './Prompt.js';
import type { NewSessionRequest } from './source.js';
import { Toned } from './theme.js';

export interface NewSessionFormProps {
  /** Prefilled: the selected session's provider and directory, so a sibling is one Enter away. */
  initial: NewSessionRequest;
  providers: readonly string[];
  onSubmit: (request: NewSessionRequest) => void;
  onCancel: () => void;
}

const fields = [
  ['provider', 'provider  '],
  ['cwd', 'directory '],
  ['message', 'message   '],
] as const;

/**
 * `n`: cal start's three questions (provider, directory, first message), one line each. Tab or
 * Enter goes to the next; Enter on the message starts the session; Esc cancels. What is typed is
 * checked by the library, as `cal start` checks its flags.
 */
export function NewSessionForm({ initial, providers, onSubmit, onCancel }: NewSessionFormProps) {
  const [shown, setShown] = useState({ values: initial, field: 0 });
  // Keys can come faster than renders: each one starts from the form as the last key left it.
  const form = useRef(shown);
  const set = (next: typeof shown) => {
    form.current = next;
    setShown(next);
  };
  useOverlayKeys((input, key) => {
    if (key.escape) return onCancel();
    const next = (values: NewSessionRequest, field: number) => {
      if (field < fields.length - 1) set({ values, field: field + 1 });
      else onSubmit(values);
    };
    const { values, field } = form.current;
    const name = fields[field]![0];
    if (key.return) return next(values, field);
    if (key.tab) return set({ values, field: Math.min(fields.length - 1, field + 1) });
    if (key.upArrow) return set({ values, field: Math.max(0, field - 1) });
    if (key.downArrow) return set({ values, field: Math.min(fields.length - 1, field + 1) });
    const typed = beforeEnter(input);
    const edited = editLine(values[name], typed ?? input, key);
    if (edited === null) return;
    set({ values: { ...values, [name]: edited }, field });
    if (typed !== null) next({ ...values, [name]: edited }, field);
  });
  const { values, field } = shown;
  return (
    <Box flexDirection="column" borderStyle="round" paddingX={1}>
      <Text bold>new session (cal start)</Text>
      {fields.map(([name, label], i) => (
        <Text key={name} wrap="truncate-start">
          <Toned tone={i === field ? 'accent' : 'dim'} bold={i === field}>
            {label}
          </Toned>
          {values[name]}
          {i === field ? <Text inverse> </Text> : null}
        </Text>
      ))}
      <Toned tone="dim">{`providers: ${providers.join(', ')}`}</Toned>
      <Toned tone="dim">tab/enter next field · enter on the message starts it · ctrl-u clears · esc cancels</Toned>
    </Box>
  );
}
