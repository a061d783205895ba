import { useInput, type Key } from "ink";
import { useEffect, useRef, useState } from "react";

type Handler = (input: string, key: Key) => void;

const NO_KEY: Key = {
  upArrow: false,
  downArrow: false,
  leftArrow: false,
  rightArrow: false,
  pageDown: false,
  pageUp: false,
  home: false,
  end: false,
  return: false,
  escape: false,
  ctrl: false,
  shift: false,
  tab: false,
  backspace: false,
  delete: false,
  meta: false,
  super: false,
  hyper: false,
  capsLock: false,
  numLock: false,
};

/** One character of a chunk as Ink would have parsed it alone (Ink splits escape sequences, not plain text). */
function keyOf(char: string): [string, Key] {
  if (char === "\r") return ["", { ...NO_KEY, return: true }];
  if (char === "\t") return ["", { ...NO_KEY, tab: true }];
  if (char === "\u007F" || char === "\b") return ["", { ...NO_KEY, backspace: true }];
  return [char, { ...NO_KEY, shift: /[A-Z]/.test(char) }];
}

/** The keys of one input: a chunk of plain characters ("jj" typed fast or pasted) is one key per character. */
export function splitKeys(input: string, key: Key): Array<[string, Key]> {
  const chars = Array.from(input);
  if (chars.length <= 1 || key.ctrl || key.meta) return [[input, key]];
  return chars.map(keyOf);
}

/**
 * Ink's `useInput`, always with the handler of the latest render, one key at a time. Ink subscribes a handler in
 * an effect, which runs after the frame is written: a key pressed right after a screen changed (a list just
 * loaded) went to the previous render's handler, which saw the previous state (an empty list), and was lost.
 * Several keys read at once arrive as one string: the first is handled now, each next one once React has
 * committed what the one before changed (an effect after a render this hook asks for), so "x" then "y" confirms
 * what x asked.
 */
export function useKeys(handler: Handler, options?: { isActive?: boolean }): void {
  const latest = useRef(handler);
  latest.current = handler;
  // A key left in the queue when the handler turns inactive (a field loses focus) is dropped, as Ink would.
  const active = useRef(true);
  active.current = options?.isActive !== false;
  const queue = useRef<Array<[string, Key]>>([]);
  const [turn, setTurn] = useState(0);
  const next = useRef(() => {
    const key = queue.current.shift();
    if (key === undefined) return;
    if (!active.current) {
      queue.current = [];
      return;
    }
    latest.current(...key);
    if (queue.current.length > 0) setTurn((n) => n + 1);
  });
  useEffect(() => {
    if (turn > 0) next.current();
  }, [turn]);
  const stable = useRef((input: string, key: Key) => {
    const idle = queue.current.length === 0;
    queue.current.push(...splitKeys(input, key));
    if (idle) next.current();
  });
  useInput(stable.current, options);
}
