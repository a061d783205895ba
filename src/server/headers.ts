import type { Context } from "hono";
import type { AppEnv } from "./context.js";

/**
 * A request header as `c.req.header(name)` reports it (every value of the name, joined by ", "), read from
 * Node's raw header list. `c.req.header` builds a WHATWG `Headers` of every header on first use, which costs
 * more than the rest of the hot path's header handling together. `name` must be lower case.
 */
export function requestHeader(c: Context<AppEnv>, name: string): string | undefined {
  const raw = c.env?.incoming?.rawHeaders;
  if (!raw) return c.req.header(name);
  let value: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length === name.length && key.toLowerCase() === name) value = value === undefined ? raw[i + 1]! : `${value}, ${raw[i + 1]!}`;
  }
  return value;
}
