import { setTimeout as sleep } from "node:timers/promises";
import { createPool, type Pool } from "../../src/db/pool.js";
import { reconcileLedger, type LedgerMismatch } from "../../src/quota/index.js";

// A watch on the ledger while a test runs: the daily accounts as one snapshot sees them, and a sampler that checks
// every few milliseconds that none holds more than it allows and that each reconciles with its rows and the log.
// Shared by the crash and fault tests (e2e through crash-cluster.ts, and the in-process ones).

export interface AccountSample {
  userId: string;
  credits: bigint;
  restored: bigint;
  posted: bigint;
  pending: bigint;
  /**
   * In the same snapshot: posted equals the user's request-log charges (the journal commits each row with its
   * charge) plus what the user's completed token transfers posted on the day (`applied`, a hold with no request).
   */
  logged: boolean;
}

export interface SamplerSummary {
  samples: number;
  /** Reads that failed (the sampler's connection was cut too; its pool reconnects). */
  failures: number;
  /** Samples where posted + pending exceeded the allowance. */
  violations: (AccountSample & { at: number })[];
  /** Samples where an account disagreed with its request log, or with its rows (reconcileLedger). */
  unreconciled: { at: number; logged: AccountSample[]; ledger: LedgerMismatch[] }[];
  /** The largest share of an allowance that was used or reserved at once. */
  peakShare: number;
  peakPending: bigint;
}

const ACCOUNTS = `select a.user_id::text, a.credits::text, a.restored::text, a.debits_posted::text as posted,
  a.debits_pending::text as pending,
  a.debits_posted = (select coalesce(sum(quota_charged), 0) from request_logs r where r.user_id = a.user_id)
    + (select coalesce(sum(h.charged), 0) from quota_holds h
       where h.account_id = a.id and h.status = 'posted' and h.request_id like 'transfer:%') as logged
from quota_account_balances a where a.kind = 'daily_allowance'`;

/** Every daily-allowance account, and whether it agrees with its user's request log. */
export async function readAccounts(pool: Pool): Promise<AccountSample[]> {
  const { rows } = await pool.query<{
    user_id: string;
    credits: string;
    restored: string;
    posted: string;
    pending: string;
    logged: boolean;
  }>(ACCOUNTS);
  return rows.map((r) => ({
    userId: r.user_id,
    credits: BigInt(r.credits),
    restored: BigInt(r.restored),
    posted: BigInt(r.posted),
    pending: BigInt(r.pending),
    logged: r.logged,
  }));
}

/**
 * Whether any account of any kind (the day's, a reseller's USD, a pack) still holds units reserved; with `leases`,
 * also whether a lease is still open (an idle one closes within lease_idle_ms and a sweep, holding nothing).
 */
export async function anyReserved(pool: Pool, opts: { leases?: boolean } = {}): Promise<boolean> {
  const { rows } = await pool.query<{ reserved: boolean }>(
    `select exists (select from quota_accounts where debits_pending <> 0)
       or ($1::boolean and exists (select from quota_leases where status = 'pending')) as reserved`,
    [opts.leases === true],
  );
  return rows[0]!.reserved;
}

/**
 * Every `intervalMs`, on a connection of its own, checks posted + pending <= credits + restored on every daily
 * account, that it agrees with its request log, and that every account reconciles with its rows
 * (docs/billing.md, "Reconciliation": holds, leases, restorations). `openPool` opens that connection's pool
 * (one that a test's faults spare, say); the sampler ends it.
 */
export function startSampler(
  databaseUrl: string,
  intervalMs = 100,
  // A pool of one: a connection cut under it is replaced on the next query.
  openPool: (url: string) => Pool = (url) => createPool(url, 1, () => {}),
): { stop(): Promise<SamplerSummary> } {
  const summary: SamplerSummary = { samples: 0, failures: 0, violations: [], unreconciled: [], peakShare: 0, peakPending: 0n };
  const pool = openPool(databaseUrl);
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      try {
        const accounts = await readAccounts(pool);
        const ledger = await reconcileLedger(pool);
        const at = performance.now();
        summary.samples++;
        for (const a of accounts) {
          const allowance = a.credits + a.restored;
          if (a.posted + a.pending > allowance) summary.violations.push({ ...a, at });
          if (allowance > 0n) summary.peakShare = Math.max(summary.peakShare, Number(a.posted + a.pending) / Number(allowance));
          if (a.pending > summary.peakPending) summary.peakPending = a.pending;
        }
        const logged = accounts.filter((a) => !a.logged);
        if (logged.length > 0 || ledger.length > 0) summary.unreconciled.push({ at, logged, ledger });
      } catch {
        summary.failures++;
      }
      await sleep(intervalMs);
    }
    await pool.end();
  })();
  return {
    async stop() {
      stopping = true;
      await loop;
      return summary;
    },
  };
}
