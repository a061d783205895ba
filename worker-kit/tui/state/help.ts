import type { KeyHelp } from "../screen.js";
import { fit, truncate } from "./text.js";

// The help bar: "key label" items separated by two spaces, wrapped onto as many lines as the width needs, so every
// key stays visible on a narrow terminal (the shell gives the body whatever rows are left).

export function helpLines(keys: readonly KeyHelp[], width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const { key, label } of keys) {
    const item = `${key} ${label}`;
    const joined = line === "" ? item : `${line}  ${item}`;
    if (line !== "" && Array.from(joined).length > width) {
      lines.push(line);
      line = item;
    } else {
      line = joined;
    }
  }
  if (line !== "") lines.push(line);
  return lines;
}

/** The help overlay's lines: each key in a column as wide as the widest, then what it does. */
export function helpOverlayLines(keys: readonly KeyHelp[], width: number): string[] {
  const keyWidth = Math.max(0, ...keys.map((k) => Array.from(k.key).length));
  return keys.map(({ key, label }) => truncate(`  ${fit(key, keyWidth)}  ${label}`, width));
}
