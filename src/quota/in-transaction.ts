import type pg from "pg";
import { createAccount, lockAccounts } from "./account-locks.js";
import type { AccountKey } from "./account-sql.js";
import { reserveDurableRow, resolveDurableRow, type DurableReserve, type DurableRow, type ReserveRow } from "./durable-sql.js";
import { restoreRow, type RestoreOutcome, type RestoreRow } from "./restore-sql.js";

export type { AccountKey } from "./account-sql.js";
export type { DurableReserve, DurableRow, ReserveRow } from "./durable-sql.js";
export type { RestoreOutcome, RestoreRow } from "./restore-sql.js";

// The ledger inside a transaction its caller already holds, for a record of the caller's that must commit with
// the ledger's rows or not at all (a token transfer's send and completion, src/transfers/transfers-sql.ts; a video
// job's end, src/media/video-end.ts). The caller locks its own record first (docs/billing.md, "Locks": a
// transfer's own lock, a job row); every ledger lock after that is taken here, in the ledger's order, so the
// order stays the ledger's to keep: a hold before its account, accounts created before any of their rank is
// locked, several accounts locked in one statement in ascending id before any is written. Folders above the
// ledger use this face, never quota's statements (its *-sql.ts modules, account-locks.ts): eslint.config.js.

// The user's day (created as a lease would), locked: its remaining decides a send. Its credits are the newest
// view of the user's plan the ledger has (a lease states it with its revision; account-kinds.ts, baseRevision).
const LOCK_DAY = `
select credits::text, restored::text, debits_posted::text, debits_pending::text from quota_accounts
where user_id = $1::uuid and kind = 'daily_allowance' and period = $2::text
for no key update`;

const LOCK_HOLD = `select account_id::text from quota_holds where id = $1::uuid for update`;

/** The ledger's operations on the caller's transaction: each commits, or rolls back, with it. */
export interface LedgerInTransaction {
  /**
   * The user's day (the daily allowance of `period`), created with `base` if missing without locking an existing
   * row, then locked until the transaction ends: its remaining (credits + restored − posted − pending).
   */
  lockDay(userId: string, period: string, base: bigint): Promise<bigint>;
  /** A durable hold (durable-sql.ts), admitted only if the account's remaining covers it: its account is locked. */
  reserveDurable(r: DurableReserve): Promise<ReserveRow>;
  /** Posts `charged` on a durable hold, or voids it (null): the hold, then its account. Undefined when there is no such hold. */
  resolveDurable(id: string, charged: bigint | null): Promise<DurableRow | undefined>;
  /**
   * Locks a durable hold, then creates `account` with `base` if missing, then locks the hold's account and
   * `account` in ascending id, before either is written (the order of docs/billing.md, "Locks"). False when
   * there is no such hold (nothing else is locked then).
   */
  lockHoldWithAccount(holdId: string, account: AccountKey, base: bigint | null): Promise<boolean>;
  /** A restoration (restore-sql.ts) on an account this transaction has locked, idempotent by source and reference. */
  restore(r: RestoreRow): Promise<RestoreOutcome>;
}

class OnCallersTransaction implements LedgerInTransaction {
  constructor(private readonly client: pg.PoolClient) {}

  async lockDay(userId: string, period: string, base: bigint): Promise<bigint> {
    await createAccount(this.client, { userId, kind: "daily_allowance", period }, base);
    const day = (
      await this.client.query<{ credits: string; restored: string; debits_posted: string; debits_pending: string }>(LOCK_DAY, [
        userId,
        period,
      ])
    ).rows[0]!;
    return BigInt(day.credits) + BigInt(day.restored) - BigInt(day.debits_posted) - BigInt(day.debits_pending);
  }

  reserveDurable(r: DurableReserve): Promise<ReserveRow> {
    return reserveDurableRow(this.client, r);
  }

  resolveDurable(id: string, charged: bigint | null): Promise<DurableRow | undefined> {
    return resolveDurableRow(this.client, id, charged);
  }

  async lockHoldWithAccount(holdId: string, account: AccountKey, base: bigint | null): Promise<boolean> {
    const hold = (await this.client.query<{ account_id: string }>(LOCK_HOLD, [holdId])).rows[0];
    if (!hold) return false;
    const accountId = await createAccount(this.client, account, base);
    await lockAccounts(this.client, [hold.account_id, accountId]);
    return true;
  }

  restore(r: RestoreRow): Promise<RestoreOutcome> {
    return restoreRow(this.client, r);
  }
}

/** The ledger on `client`, a transaction the caller began and ends (inTransaction, src/db/transaction.ts). */
export function ledgerInTransaction(client: pg.PoolClient): LedgerInTransaction {
  return new OnCallersTransaction(client);
}
