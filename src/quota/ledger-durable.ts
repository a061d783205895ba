import { inTransaction } from "../db/transaction.js";
import { kindSpec } from "./account-kinds.js";
import { ensureAccount } from "./account-sql.js";
import { AUTO_RESET_THRESHOLD, autoResetUseId } from "./auto-reset.js";
import { readDurableRow, reserveDurableRow, resolveDurableRow, type DurableRow } from "./durable-sql.js";
import { keyOf, revisionOf, type LedgerContext } from "./ledger-accounts.js";
import { useResetIn } from "./resets-sql.js";
import { HoldNotFoundError, HoldResolvedError, type DurableHold, type DurableHoldInput, type DurableReserveResult } from "./types.js";

// The ledger's durable holds (docs/billing.md, "Durable holds"): taken, posted and voided by guarded statements
// (durable-sql.ts), idempotent by the hold's id.

const toDurable = (id: string, row: DurableRow): DurableHold => ({
  id,
  accountId: row.accountId,
  amount: row.amount,
  status: row.status,
  charged: row.charged,
  reference: row.reference,
  expiresAt: row.expiresAt,
});

export async function reserveDurable(ctx: LedgerContext, input: DurableHoldInput): Promise<DurableReserveResult> {
  if (input.amount < 0n) throw new RangeError(`cannot hold a negative amount (${input.amount})`);
  const { pool } = ctx;
  const now = ctx.clock.now();
  const { key, base } = keyOf(input, now);
  const revision = revisionOf(ctx, input);
  const args = {
    id: input.id,
    userId: key.userId,
    kind: key.kind,
    period: key.period,
    base,
    baseRevision: revision,
    amount: input.amount,
    reference: input.reference,
    expiresAt: input.expiresAt,
  };
  let row: Awaited<ReturnType<typeof reserveDurableRow>>;
  if (input.weeklyResets != null && input.amount > 0n && kindSpec(input.kind).resettable) {
    // An automatic reset first, as a request's in admission, and the hold it is for in the same transaction: a
    // reset is never spent for a hold that is then refused. Its id is the hold's, so a retry is the same use.
    const weeklyBase = input.weeklyResets;
    row = await inTransaction(pool, async (client) => {
      await ensureAccount(client, key, base, revision);
      await useResetIn(client, {
        userId: key.userId,
        id: autoResetUseId(input.id, 0),
        day: key.period,
        weeklyBase,
        baseRevision: revision,
        nowIso: now.toISOString(),
        trigger: "automatic",
        automatic: { ownFree: 0n, need: input.amount, threshold: AUTO_RESET_THRESHOLD, posting: 0n },
      });
      return reserveDurableRow(client, args);
    });
  } else {
    row = await reserveDurableRow(pool, args);
    if (row.account === "missing") {
      await ensureAccount(pool, key, base, revision);
      row = await reserveDurableRow(pool, args);
    }
  }
  if (row.account === "missing") throw new Error(`the account of durable hold ${input.id} vanished`);
  if (!row.inserted) {
    // The same id reserved before (a retry): that hold, whatever became of it, is the answer.
    const earlier = await readDurableRow(pool, input.id);
    if (earlier) return { ok: true, hold: toDurable(input.id, earlier) };
    return {
      ok: false,
      allowance: row.allowance,
      used: row.posted,
      reserved: row.pending,
      resetsAt: kindSpec(input.kind).periodEnd(now),
    };
  }
  return {
    ok: true,
    hold: {
      id: input.id,
      accountId: row.accountId,
      amount: input.amount,
      status: "pending",
      charged: null,
      reference: input.reference,
      expiresAt: input.expiresAt,
    },
  };
}

/** Posts `charged`, or voids (null). */
export async function resolveDurable(ctx: LedgerContext, id: string, charged: bigint | null): Promise<DurableHold> {
  const row = await resolveDurableRow(ctx.pool, id, charged);
  if (!row) throw new HoldNotFoundError(id);
  // Posting a posted hold, or voiding a voided or expired one, is the first outcome again.
  const conflicting = charged === null ? row.status === "posted" : row.status === "voided";
  if (conflicting) throw new HoldResolvedError(id, row.status);
  return toDurable(id, row);
}
