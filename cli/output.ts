import { ConfigError } from "../src/config/load.js";
import { EmbeddedPostgresError } from "../src/db/embedded-common.js";
import { GatewayError } from "../src/errors.js";
import { ListenError } from "../src/server/listen.js";

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Fixed-width columns for humans; `--json` is the scripting interface. */
export function printTable(rows: Record<string, unknown>[], columns: string[]): void {
  if (rows.length === 0) {
    process.stdout.write("(none)\n");
    return;
  }
  const cell = (v: unknown) => (v === null || v === undefined ? "-" : Array.isArray(v) ? v.join(",") : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  process.stdout.write(`${line(columns.map((c) => c.toUpperCase()))}\n`);
  for (const row of rows) process.stdout.write(`${line(columns.map((c) => cell(row[c])))}\n`);
}

/** Every CLI failure ends here: one line on stderr and a non-zero status (2 for an invalid config). */
export function fail(err: unknown): never {
  const known =
    err instanceof ConfigError || err instanceof GatewayError || err instanceof EmbeddedPostgresError || err instanceof ListenError;
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`gateway: ${message.split("\n")[0]}\n`);
  if (!known && process.env.GATEWAY_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
  process.exit(err instanceof ConfigError ? 2 : 1);
}

/** Wraps a commander action so every error takes the one-line path. */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      fail(err);
    }
  };
}
