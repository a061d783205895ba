import type { DatabaseHealth } from "../db/health.js";
import type { Listener } from "../db/listener.js";
import type { LedgerMetrics } from "../metrics/recorders.js";
import type { Clock } from "../time/clock.js";
import type { Journal } from "./lease-sql.js";
import type { Instance } from "./types.js";

// What createQuotaLedger (ledger.ts) is built with.

export interface LedgerOptions {
  /** This serving process; a ledger without one (admin commands) reads, credits and restores but never reserves. */
  instance?: Instance;
  clock?: Clock;
  /** A request holding its reservation longer than this has it expired (a late settle still posts). */
  maxHoldSeconds: number;
  /** A process silent this long is presumed dead and its leases expire (quota.instance_timeout_seconds). */
  instanceTimeoutSeconds?: number;
  /** A lease unused this long gives its units back (quota.lease_idle_ms). */
  leaseIdleMs?: number;
  /** How long a settlement may wait for others to share its commit (quota.commit_group_ms). */
  commitGroupMs?: number;
  /**
   * When this process loaded its config, in seconds: the second part of the revision of the base credits it states
   * (account-kinds.ts, baseRevision). 0 for a ledger that only reads and credits.
   */
  configRevision?: bigint;
  /** Commits each request's record with its resolution (the request log). */
  journal?: Journal;
  /** Where transient database faults are reported (one line when the database goes away, one when it is back). */
  health?: DatabaseHealth;
  /** A reservation that needs the database waits at most this long, then gets 503 (database.request_timeout_ms). */
  admissionTimeoutMs?: number;
  /** At close, how long unwritten settlements keep being retried before they are given up (and logged). */
  shutdownGraceMs?: number;
  /** A background statement (sync, direct post, expiry) whose answer takes longer is abandoned and retried. */
  statementTimeoutMs?: number;
  onSyncError?: (err: unknown, leaseId: string) => void;
  /** Holds, resolutions, overshoots, expiries and lease syncs; none recorded without it. */
  metrics?: LedgerMetrics;
  /** The process's LISTEN connection: processes ask each other for unused units through it (give-back.ts). */
  listener?: Listener;
}
