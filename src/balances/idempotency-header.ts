import type { Context } from "hono";
import type { ErrorCode } from "../errors.js";
import type { AppEnv } from "../server/context.js";
import { parseIdempotencyKey, REPLAYED_HEADER, type Keyed } from "./idempotency.js";

// The HTTP face of idempotency.ts: the request's Idempotency-Key header in, the stored answer out.

export const IDEMPOTENCY_HEADER = "Idempotency-Key";

/** The caller's key; undefined without the header. A malformed one is 400 naming the header. */
export function idempotencyKeyOf(c: Context<AppEnv>): string | undefined {
  const raw = c.req.header(IDEMPOTENCY_HEADER);
  return raw === undefined ? undefined : parseIdempotencyKey(raw, IDEMPOTENCY_HEADER);
}

/** The answer of an idempotent call: a replay says so in its Idempotent-Replayed header. */
export function keyedJson<T extends object>(c: Context<AppEnv>, keyed: Keyed<T>) {
  if (keyed.replayed) c.header(REPLAYED_HEADER, "true");
  return c.json(keyed.answer, keyed.status as 200 | 201);
}

/** What the API description says of the header, on each operation that takes it. */
export const idempotencyHeaderDescription = (what: string) => ({
  [IDEMPOTENCY_HEADER]: [
    "Optional: makes the call safe to retry. 1 to 255 printable ASCII characters (a UUID is a good key), bare or as the IETF draft's quoted string (the same key); anything else is 400 `invalid_value` naming the header.",
    `The same key again, with the same body, answers the first ${what}'s status and body with \`Idempotent-Replayed: true\` and applies nothing again, also when the requests arrive at once (they wait for the first); another body is 422 \`idempotency_key_reused\`.`,
    "A refusal of the operation itself (409, 429) is the key's answer too; a 400 or a 5xx stores nothing.",
    "Keys are scoped to the operation and the user whose balance it moves, and kept `retention.idempotency_days` (7) days.",
    "Without the header the gateway retries under a key of its own; a 503 names the key it used (the `Idempotency-Key` answer header), for a retry that cannot apply the call twice.",
  ].join(" "),
});

/** The errors the header adds to an operation with a body. */
export const idempotencyErrors: readonly ErrorCode[] = ["invalid_value", "idempotency_key_reused"];
