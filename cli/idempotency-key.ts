import { randomUUID } from "node:crypto";
import { parseIdempotencyKey, type Keyed } from "../src/balances/idempotency.js";
import type { CommonOptions } from "./context.js";
import { printJson } from "./output.js";

// The idempotency key of a command that moves money or quota (docs/cli.md, "Idempotency keys"): the operator's
// `--idempotency-key`, or a new one, announced on stderr before anything is sent, so that an operator whose command
// died midway (a lost connection, a killed terminal) can rerun it with that key and never apply it twice.

export const idempotencyKeyOption = [
  "--idempotency-key <key>",
  "retry a command with the key it printed: applied once, whatever the reruns",
] as const;

export function commandKey(given: string | undefined, what: string): string {
  if (given !== undefined) return parseIdempotencyKey(given, "--idempotency-key");
  const key = randomUUID();
  process.stderr.write(
    `gateway: idempotency key: ${key} (rerun with --idempotency-key ${key} to retry this ${what} without applying it twice)\n`,
  );
  return key;
}

/** The command's answer, then its key (`--json`: `idempotency_key` and `replayed` beside the answer's fields). */
export function printKeyed<T extends object>(keyed: Keyed<T>, opts: CommonOptions, what: string, print: (answer: T) => void): void {
  if (opts.json) return printJson({ ...keyed.answer, idempotency_key: keyed.key, replayed: keyed.replayed });
  print(keyed.answer);
  const replayed = keyed.replayed ? ` (replayed: the first ${what} with this key; nothing was applied now)` : "";
  process.stdout.write(`idempotency key: ${keyed.key}${replayed}\n`);
}
