import { useRef, useState } from 'react';
import { Box, Text } from 'ink';
import { useOverlayKeys } from './overlay-keys.js';
import { Toned } from './theme.js';

export interface LineInputProps {
  label: string;
  initial?: string;
  /** A dim line under the input (what Enter does, the choices). */
  hint?: string | undefined;
  /** Called with the text as it changes (the filter applies while it is typed). */
  onChange?: (value: string) => void;
  onSubmit: (value: string) => void;
  onCancel: () => void;
}

/** What a key does to a one-line text: the new text, or null when the key is not an edit. */
export function editLine(value: string, input: string, key: { backspace: boolean; delete: boolean; ctrl: boolean; meta: boolean; tab: boolean }): string | null {
  if (key.backspace || key.delete) return Array.from(value).slice(0, -1).join('');
  // Ctrl-U clears the line, as in a shell.
  if (key.ctrl && input === 'u') return '';
  if (key.ctrl || key.meta || key.tab || input === '') return null;
  // A paste arrives as one input: its line breaks become spaces (one line), control bytes go.
  return value + input.replace(/\r\n|\r|\n/g, ' ').replace(/[\u0000-\u001f\u007f]/g, '');
}

/**
 * A chunk of keys that ends in Enter (text typed faster than the terminal is read, then Enter)
 * is the text, then Enter: the text without it, or null when the chunk has no such Enter.
 */
export function beforeEnter(input: string): string | null {
  return input.length > 1 && input.endsWith('\r') ? input.slice(0, -1) : null;
}

/** A one-line input: Enter submits, Esc cancels. */
export function LineInput({ label, initial = '', hint, onChange, onSubmit, onCancel }: LineInputProps) {
  const [value, setValue] = useState(initial);
  // Keys can come faster than renders: each edit starts from the last one, not from the last render.
  const current = useRef(initial);
  useOverlayKeys((input, key) => {
    if (key.escape) return onCancel();
    if (key.return) return onSubmit(current.current);
    const typed = beforeEnter(input);
    const next = editLine(current.current, typed ?? input, key);
    if (next === null) return;
    current.current = next;
    setValue(next);
    onChange?.(next);
    if (typed !== null) onSubmit(next);
  });
  return (
    <Box flexDirection="column">
      <Text wrap="truncate-start">
        <Toned tone="accent" bold>
          {label}
        </Toned>
        {value}
        <Text inverse> </Text>
      </Text>
      {hint ? <Toned tone="dim">{hint}</Toned> : null}
    </Box>
  );
}

export interface ConfirmProps {
  question: string;
  onAnswer: (yes: boolean) => void;
}

/** A y/n question: y confirms; n or Esc declines; other keys are ignored. */
export function Confirm({ question, onAnswer }: ConfirmProps) {
  useOverlayKeys((input, key) => {
    if (input === 'y' || input === 'Y') onAnswer(true);
    else if (input === 'n' || input === 'N' || key.escape) onAnswer(false);
  });
  return (
    <Text>
      <Toned tone="warn" bold>
        {question}
      </Toned>{' '}
      (y/n)
    </Text>
  );
}
