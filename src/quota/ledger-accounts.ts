import type pg from "pg";
import type { Pool } from "../db/pool.js";
import type { Clock } from "../time/clock.js";
import { accountAt, baseRevision, kindSpec } from "./account-kinds.js";
import { ensureAccount, readAccount, type AccountKey, type AccountRow } from "./account-sql.js";
import { creditResellerRow } from "./reseller.js";
import { earlierRestoration, restoreRow } from "./restore-sql.js";
import type { AccountBalance, AccountKind, AccountRef, Restoration, RestoreInput } from "./types.js";

// The ledger's accounts outside of leases (ledger.ts): which account a reference names now, its balance, and
// the statements that move it without a hold (restorations, reseller credits).

/** What the ledger's statements outside of its escrows share. */
export interface LedgerContext {
  pool: Pool;
  clock: Clock;
  /** When this process loaded its config (LedgerOptions.configRevision; 0 for a ledger that only reads and credits). */
  configRevision: bigint;
}

export const keyOf = (ref: AccountRef, now: Date): { key: AccountKey; base: bigint | null } => {
  const { period, base } = accountAt(ref, now);
  return { key: { userId: ref.userId, kind: ref.kind, period }, base };
};

export const revisionOf = (ctx: LedgerContext, ref: { planRevision?: number }) => baseRevision(ref.planRevision ?? 0, ctx.configRevision);

export function toBalance(
  kind: AccountKind,
  period: string,
  row: Pick<AccountRow, "credits" | "restored" | "posted" | "pending"> | undefined,
  base: bigint | null,
  now: Date,
): AccountBalance {
  const credits = base ?? row?.credits ?? 0n;
  const restored = row?.restored ?? 0n;
  const used = row?.posted ?? 0n;
  const reserved = row?.pending ?? 0n;
  return {
    kind,
    period,
    credits,
    restored,
    used,
    reserved,
    remaining: credits + restored - used - reserved,
    resetsAt: kindSpec(kind).periodEnd(now),
  };
}

export async function restore(ctx: LedgerContext, input: RestoreInput): Promise<Restoration> {
  if (input.amount < 0n) throw new RangeError(`cannot restore a negative amount (${input.amount})`);
  const { key, base } = keyOf(input, ctx.clock.now());
  const args = {
    userId: key.userId,
    kind: key.kind,
    period: key.period,
    amount: input.amount,
    upToSpent: input.upToSpent,
    source: input.source,
    reference: input.reference,
  };
  let outcome = await restoreRow(ctx.pool, args);
  if (outcome.account === "missing") {
    await ensureAccount(ctx.pool, key, base, revisionOf(ctx, input));
    outcome = await restoreRow(ctx.pool, args);
  }
  if (outcome.account === "found" && outcome.applied !== null)
    return { applied: outcome.applied, duplicate: false, accountId: outcome.accountId };
  const earlier = await earlierRestoration(ctx.pool, input.source, input.reference);
  if (!earlier) throw new Error(`restoration ${input.source}/${input.reference} was neither applied nor found`);
  return { applied: earlier.amount, duplicate: true, accountId: earlier.accountId };
}

export async function balance(ctx: LedgerContext, ref: AccountRef): Promise<AccountBalance> {
  const now = ctx.clock.now();
  const { key, base } = keyOf(ref, now);
  return toBalance(ref.kind, key.period, await readAccount(ctx.pool, key), base, now);
}

export async function creditReseller(
  ctx: LedgerContext,
  userId: string,
  amount: bigint,
  note: string,
  client?: pg.PoolClient,
): Promise<AccountBalance> {
  const now = ctx.clock.now();
  const kind: AccountKind = "reseller_usd";
  const period = kindSpec(kind).period(now);
  return toBalance(kind, period, await creditResellerRow(client ?? ctx.pool, userId, amount, note, { kind, period }), null, now);
}
