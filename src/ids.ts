import { randomUUID } from "node:crypto";

// The one check of an id's form before it reaches a uuid column: a malformed id would make PostgreSQL throw, and
// the routes answer it as what it is (an id nobody has).
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string): boolean => UUID.test(value);

// A request id is `req_` and 32 hex digits in UUIDv7's layout (RFC 9562): the first 12 are the milliseconds since
// 1970 when it was minted, so the id itself says which days of the partitioned request log can hold its row.
// The rest is random: 74 bits of randomUUID's, with its variant bits and version 7. Ids minted before were
// random UUIDv4s (version 4), which tell no time.
const REQUEST_ID_V7 = /^req_([0-9a-f]{12})7[0-9a-f]{3}[89ab][0-9a-f]{15}$/;

/** A new request id for the moment `nowMs`. */
export function newRequestId(nowMs: number = Date.now()): string {
  const random = randomUUID().replaceAll("-", "");
  return `req_${nowMs.toString(16).padStart(12, "0").slice(-12)}7${random.slice(13)}`;
}

/** When a request id was minted; null for an id without a time (an older random id, or not one of ours). */
export function requestIdTime(id: string): Date | null {
  const hex = REQUEST_ID_V7.exec(id)?.[1];
  return hex === undefined ? null : new Date(Number.parseInt(hex, 16));
}
