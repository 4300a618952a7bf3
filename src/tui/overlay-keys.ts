import { createContext, useContext, useLayoutEffect, useRef } from 'react';
import { useInput } from 'ink';

/** What Ink passes a key handler. */
export type KeyHandler = Parameters<typeof useInput>[0];

/**
 * Takes the keys for an overlay (an input, a question, the form) until it closes: returns the
 * release. Set by the App, which has the one Ink input listener and hands each key either to
 * its own commands or to the overlay that claimed them.
 */
export type ClaimKeys = (handler: KeyHandler) => () => void;

export const OverlayKeysContext = createContext<ClaimKeys | null>(null);

/**
 * The keys of an open overlay. Under the App they come through the App's one listener, so a key
 * goes to what is open when it is read: a closed input is never given the key after its Enter,
 * and a key read before a new question was drawn waits for it (Ink's own listeners subscribe and
 * unsubscribe a render late). Outside the App (a component on its own), Ink's useInput.
 */
export function useOverlayKeys(handler: KeyHandler): void {
  const claim = useContext(OverlayKeysContext);
  const latest = useRef(handler);
  latest.current = handler;
  useInput((input, key) => latest.current(input, key), { isActive: claim === null });
  // A layout effect runs as the overlay is committed to the screen, before the next key is read.
  useLayoutEffect(() => (claim ? claim((input, key) => latest.current(input, key)) : undefined), [claim]);
}
