import type pg from "pg";
import type { Pool } from "../db/pool.js";
import { cutoffDaysAgo, deleteInBatches } from "../db/retention.js";

// The idempotency keys' statements (schema.ts, idempotency.ts). Claiming a key is an insert: a second transaction
// inserting the same key waits on the first one's row until it ends, then inserts (the first rolled back) or finds
// the committed row. That wait is what makes concurrent duplicates answer the first call's answer.

export interface KeyRef {
  operation: string;
  ownerId: string;
  key: string;
}

export interface StoredAnswer {
  fingerprint: string;
  callId: string;
  status: number;
  answer: string;
}

const CLAIM = `
insert into idempotency_keys (operation, owner_id, key, fingerprint, call_id)
values ($1::text, $2::uuid, $3::text, $4::text, $5::uuid)
on conflict (operation, owner_id, key) do nothing
returning 1`;

// Its own statement, after the claim: a statement that waited on another transaction's row sees that row's
// commit only in a snapshot taken after the wait.
const STORED = `
select fingerprint, call_id::text, status, answer from idempotency_keys
where operation = $1::text and owner_id = $2::uuid and key = $3::text`;

const ANSWER = `
update idempotency_keys set status = $4::smallint, answer = $5::text
where operation = $1::text and owner_id = $2::uuid and key = $3::text`;

const refOf = (k: KeyRef) => [k.operation, k.ownerId, k.key];

/**
 * Claims the key in the caller's transaction: undefined when this transaction now holds it, else the answer stored
 * by the call that committed it first.
 */
export async function claimKey(
  client: pg.PoolClient,
  k: KeyRef,
  claim: { fingerprint: string; callId: string },
): Promise<StoredAnswer | undefined> {
  // A row found gone between the two statements was pruned (its retention ended): the key is free again.
  for (;;) {
    const claimed = await client.query(CLAIM, [...refOf(k), claim.fingerprint, claim.callId]);
    if (claimed.rowCount === 1) return undefined;
    const row = (await client.query<{ fingerprint: string; call_id: string; status: number; answer: string }>(STORED, refOf(k))).rows[0];
    if (row) return { fingerprint: row.fingerprint, callId: row.call_id, status: row.status, answer: row.answer };
  }
}

/** Stores the answer of the operation that claimed the key, in the same transaction. */
export async function storeAnswer(client: pg.PoolClient, k: KeyRef, status: number, answer: string): Promise<void> {
  await client.query(ANSWER, [...refOf(k), status, answer]);
}

const DELETE_KEYS = `
delete from idempotency_keys where (operation, owner_id, key) in (
  select operation, owner_id, key from idempotency_keys where created_at < $1::timestamptz limit $2::int
)`;

/**
 * Deletes the keys created more than `days` days before the database's now (the ledger_retention task), in
 * batches; returns how many and the cutoff.
 */
export async function pruneIdempotencyKeys(pool: Pool, days: number, batchRows: number): Promise<{ keys: number; cutoff: string }> {
  const cutoff = await cutoffDaysAgo(pool, days);
  const keys = await deleteInBatches(batchRows, async () => (await pool.query(DELETE_KEYS, [cutoff, batchRows])).rowCount ?? 0);
  return { keys, cutoff };
}
