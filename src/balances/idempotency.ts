import { createHash, randomUUID } from "node:crypto";
import type pg from "pg";
import { DatabaseUnavailableError, readWithinDeadline } from "../db/faults.js";
import type { Pool } from "../db/pool.js";
import { inTransaction } from "../db/transaction.js";
import { errors, GatewayError, type ErrorCode } from "../errors.js";
import { claimKey, storeAnswer, type KeyRef, type StoredAnswer } from "./idempotency-sql.js";

// Idempotency of the calls that move money or quota (docs/billing.md, "Idempotency of money calls"; after the IETF
// Idempotency-Key draft and Stripe). A call runs in one transaction that first claims its key, then does the
// operation on that transaction's client, then stores the answer: the key, the effect and the answer commit
// together or not at all. The same key again answers the stored answer; a COMMIT whose outcome is unknown is
// resolved by running the call again under the same key, which finds the first attempt's answer if it committed.

export type IdempotentOperation = "reseller_credit" | "reset_grant" | "reset_use";

/** An idempotent call's answer, and the key it ran under. */
export interface Keyed<T> {
  answer: T;
  status: number;
  /** The caller's key, or the one the gateway made for its own retries when the caller gave none. */
  key: string;
  /** The answer was stored by an earlier call with this key: nothing happened now. */
  replayed: boolean;
}

export interface IdempotentCall<T> {
  operation: IdempotentOperation;
  /** Whose money or quota moves: the key's scope with the operation. */
  ownerId: string;
  /** The caller's key (parseIdempotencyKey); undefined: the call makes its own, for its internal retries. */
  key: string | undefined;
  /** What was asked, normalised: the same key with another request is 422 idempotency_key_reused. */
  request: Record<string, string | number | null>;
  /** The answer's status when the operation succeeds. */
  status: number;
  /**
   * The operation, on the transaction that holds the key; it must use no other connection. A GatewayError from
   * 401 to 499 is a refusal of the operation (409 nothing to restore, 429 none left): what the operation wrote is
   * undone and the refusal is stored as the key's answer. A 400 is a request to correct, and nothing is stored,
   * as for a 5xx: the key stays free.
   */
  work(client: pg.PoolClient): Promise<T>;
}

export interface Idempotency {
  run<T>(call: IdempotentCall<T>): Promise<Keyed<T>>;
}

/** The answer header of a replay (Stripe's name): the answer is an earlier call's, nothing happened now. */
export const REPLAYED_HEADER = "Idempotent-Replayed";

const MAX_KEY = 255;
const PRINTABLE = /^[\x20-\x7e]+$/;
/** The draft's form of the key, a structured-field string (RFC 8941): in double quotes, `\"` and `\\` escaped. */
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;

/**
 * A key as the caller wrote it (`param` names where: the header, or the CLI's option): 1 to 255 printable ASCII
 * characters, bare (as Stripe takes it) or as the draft's quoted string, which stands for the same key.
 */
export function parseIdempotencyKey(raw: string, param: string): string {
  const quoted = SF_STRING.exec(raw);
  const key = quoted ? quoted[1]!.replace(/\\(["\\])/g, "$1") : raw;
  if (key.length === 0 || key.length > MAX_KEY || !PRINTABLE.test(key)) {
    throw errors.badRequest(`${param} must be 1 to ${MAX_KEY} printable ASCII characters (a UUID is a good key).`, param, "invalid_value");
  }
  return key;
}

const WHAT: Record<IdempotentOperation, string> = {
  reseller_credit: "a credit of this user's reseller balance",
  reset_grant: "a reset grant to this user",
  reset_use: "a reset use",
};

const fingerprintOf = (operation: IdempotentOperation, request: IdempotentCall<unknown>["request"]) =>
  createHash("sha256")
    .update(JSON.stringify([operation, request]))
    .digest("hex");

const isRefusal = (err: unknown): err is GatewayError => err instanceof GatewayError && err.status > 400 && err.status < 500;

interface StoredRefusal {
  code: ErrorCode;
  message: string;
  param: string | null;
}

function keyReused(operation: IdempotentOperation): GatewayError {
  return new GatewayError({
    code: "idempotency_key_reused",
    param: "Idempotency-Key",
    message: `This idempotency key was used for ${WHAT[operation]} with another body; send that body again to learn its outcome, or use a new key.`,
  });
}

/** A stored refusal, thrown again as it was first answered (its Retry-After aside: waiting changes no replay). */
function storedRefusal(stored: StoredAnswer, replayed: boolean): GatewayError {
  const r = JSON.parse(stored.answer) as StoredRefusal;
  return new GatewayError({
    code: r.code,
    message: r.message,
    param: r.param,
    status: stored.status,
    headers: replayed ? { [REPLAYED_HEADER]: "true" } : {},
  });
}

/** The 503 of a call whose attempts all failed on the database: the last may have committed, so its key says. */
function outcomeUnknown(key: string): GatewayError {
  return new GatewayError({
    code: "database_unavailable",
    message: `The gateway's database did not confirm this operation in time: it may or may not have taken effect. Retry with the idempotency key ${key} (the Idempotency-Key header, or --idempotency-key) to learn its outcome; that key never applies it twice.`,
    headers: { "Retry-After": "2", "Idempotency-Key": key },
  });
}

type Attempted<T> = { answer: T } | { refused: GatewayError } | { stored: StoredAnswer };

export function createIdempotency(deps: {
  pool: Pool;
  /** The request's deadline for its database work (database.request_timeout_ms): past it, 503. */
  timeoutMs: number;
  onFault?: (err: unknown) => void;
}): Idempotency {
  async function attempt<T>(call: IdempotentCall<T>, ref: KeyRef, fingerprint: string, callId: string): Promise<Keyed<T>> {
    const outcome = await inTransaction(deps.pool, async (client): Promise<Attempted<T>> => {
      const stored = await claimKey(client, ref, { fingerprint, callId });
      if (stored) return { stored };
      await client.query("savepoint idempotent_work");
      try {
        const answer = await call.work(client);
        await storeAnswer(client, ref, call.status, JSON.stringify(answer));
        return { answer };
      } catch (err) {
        if (!isRefusal(err)) throw err;
        await client.query("rollback to savepoint idempotent_work");
        const refusal: StoredRefusal = { code: err.code, message: err.message, param: err.param };
        await storeAnswer(client, ref, err.status, JSON.stringify(refusal));
        return { refused: err };
      }
    });
    if ("refused" in outcome) throw outcome.refused;
    if ("answer" in outcome) return { answer: outcome.answer, status: call.status, key: ref.key, replayed: false };
    const { stored } = outcome;
    if (stored.fingerprint !== fingerprint) throw keyReused(call.operation);
    // This call's own earlier attempt (its COMMIT's answer lost) is no replay: its answer is this call's first.
    const replayed = stored.callId !== callId;
    if (stored.status >= 400) throw storedRefusal(stored, replayed);
    // Our own JSON of the first answer, parsed back: the same body, byte for byte, once serialised again.
    return { answer: JSON.parse(stored.answer) as T, status: stored.status, key: ref.key, replayed };
  }

  return {
    async run(call) {
      const ref: KeyRef = { operation: call.operation, ownerId: call.ownerId, key: call.key ?? randomUUID() };
      const callId = randomUUID();
      const fingerprint = fingerprintOf(call.operation, call.request);
      try {
        // Under its key an attempt is as safe to repeat as a read: one whose COMMIT did land is found by the next,
        // which answers its answer. So transient faults are retried, with readWithinDeadline's backoff, until the
        // request's deadline.
        return await readWithinDeadline(deps.timeoutMs, () => attempt(call, ref, fingerprint, callId), deps.onFault);
      } catch (err) {
        if (err instanceof DatabaseUnavailableError) throw outcomeUnknown(ref.key);
        throw err;
      }
    },
  };
}
