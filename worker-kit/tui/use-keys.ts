import { useInput, type Key } from "ink";
import { useRef } from "react";

/**
 * Ink's `useInput`, always with the handler of the latest render. Ink subscribes a handler in an effect, which
 * runs after the frame is written: a key pressed right after a screen changed (a list just loaded) went to the
 * previous render's handler, which saw the previous state (an empty list), and was lost.
 */
export function useKeys(handler: (input: string, key: Key) => void, options?: { isActive?: boolean }): void {
  const latest = useRef(handler);
  latest.current = handler;
  const stable = useRef((input: string, key: Key) => latest.current(input, key));
  useInput(stable.current, options);
}
