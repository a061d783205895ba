import type { Context } from "hono";
import { errors } from "../errors.js";
import { UPSTREAM_KEY_HEADER_NAME } from "./metered-errors.js";
import type { AppEnv } from "../server/context.js";
import { requestHeader } from "../server/headers.js";

// Bring-your-own keys (spec "Authentication" rule 3): a client may send its own key for the model's provider in
// one header. The key lives in this request only: it is handed to the upstream call and kept nowhere else (no
// context variable, no cache, no log field), and no message ever repeats it (docs/auth.md).

const HEADER = UPSTREAM_KEY_HEADER_NAME.toLowerCase();

/**
 * Visible ASCII without spaces: what every vendor's keys are made of, and safe in the upstream's header. A
 * space also refuses a scheme ("Bearer sk-…") and two headers, which arrive joined by ", ".
 */
const KEY = /^[\x21-\x7e]{1,1024}$/;

/** The client's own upstream key, or undefined without the header; a 400 (never repeating the value) when malformed. */
export function readUpstreamKey(c: Context<AppEnv>): string | undefined {
  const value = requestHeader(c, HEADER);
  if (value === undefined) return undefined;
  if (!KEY.test(value)) {
    throw errors.badRequest(
      `The ${UPSTREAM_KEY_HEADER_NAME} header must hold one key alone: 1 to 1024 visible ASCII characters, no spaces and no scheme.`,
      null,
      "invalid_upstream_key",
    );
  }
  return value;
}
