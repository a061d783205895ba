import { Text } from "ink";
import { useRef } from "react";
import { useKeys } from "./use-keys.js";

// A one-line text field: printable keys append, backspace deletes, enter submits. Keys that move between fields
// (tab, arrows, escape) are left to the form.

export interface TextFieldProps {
  label: string;
  value: string;
  onChange(value: string): void;
  onSubmit(): void;
  focused: boolean;
  /** Shown instead of each character (passwords). */
  mask?: string;
  width: number;
}

export function TextField({ label, value, onChange, onSubmit, focused, mask, width }: TextFieldProps) {
  // Keys can arrive faster than React re-renders (a paste, key repeat): each one edits the latest value, not the
  // value of the render whose handler happens to receive it.
  const latest = useRef(value);
  latest.current = value;
  const change = (next: string) => {
    latest.current = next;
    onChange(next);
  };
  useKeys(
    (input, key) => {
      if (key.return) onSubmit();
      else if (key.backspace || key.delete) change(Array.from(latest.current).slice(0, -1).join(""));
      else if (input !== "" && !key.ctrl && !key.meta && !key.tab && !key.escape && !key.upArrow && !key.downArrow) {
        change(latest.current + input.replace(/[\r\n]/g, ""));
      }
    },
    { isActive: focused },
  );
  const shown = mask === undefined ? value : mask.repeat(Array.from(value).length);
  // Only the tail that fits is shown, so the caret stays in view while typing a long value.
  const room = Math.max(1, width - label.length - 4);
  const tail = Array.from(shown).slice(-room).join("");
  return (
    <Text wrap="truncate-end">
      <Text bold={focused}>{focused ? "> " : "  "}</Text>
      {label}: {tail}
      {focused ? <Text inverse> </Text> : null}
    </Text>
  );
}
