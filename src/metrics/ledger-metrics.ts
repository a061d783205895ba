import type { Registry } from "prom-client";
import type { AccountMetrics, LedgerMetrics } from "./recorders.js";
import { counterFamily, histogramFamily } from "./series.js";

// The ledger's events: holds and their resolutions, the overshoots (counted, as docs/architecture.md "Rules" asks), expiries, lease
// syncs. Account kinds are the ledger's own names (never input), and each escrow binds its kind's children once.

/**
 * Lease syncs (one commit of a batch of settlements) and the reservations waiting for one: milliseconds unless the
 * database is slow or away.
 */
const SYNC_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function ledgerMetrics(registry: Registry): LedgerMetrics {
  const byKind = (name: string, help: string) => counterFamily(registry, { name, help, labelNames: ["account_kind"] });
  const holds = byKind("gateway_ledger_holds_total", "Requests' holds taken (reservations admitted).");
  const posts = byKind("gateway_ledger_posts_total", "Holds posted (charged), overshoots included.");
  const voids = byKind("gateway_ledger_voids_total", "Holds voided (nothing charged).");
  const overshoots = byKind("gateway_ledger_overshoots_total", "Holds posted above the amount held (the charge is kept).");
  const overshootUnits = byKind(
    "gateway_ledger_overshoot_units_total",
    "What overshoots charged above their holds, in the account kind's unit (quota units; nano-USD for reseller_usd).",
  );
  const syncFailures = byKind(
    "gateway_ledger_lease_sync_failures_total",
    "Lease syncs answered with a definitive error: the lease ended and its charges posted straight to the account.",
  );
  const withdrawals = byKind(
    "gateway_ledger_withdrawals_total",
    "Charges withdrawn: the database could not commit them before the request's deadline, so the answer was refused (503) and nothing charged.",
  );
  const syncs = histogramFamily(registry, {
    name: "gateway_ledger_lease_sync_duration_seconds",
    help: "Seconds from a lease sync's first attempt to its commit (retries of transient faults included).",
    labelNames: ["account_kind"],
    buckets: SYNC_BUCKETS,
  });
  const waits = histogramFamily(registry, {
    name: "gateway_ledger_admission_wait_seconds",
    help: "Seconds a reservation that did not fit its lease's free units waited for a sync before its answer (the others wait for none).",
    labelNames: ["account_kind"],
    buckets: SYNC_BUCKETS,
  });
  const expiries = counterFamily(registry, {
    name: "gateway_ledger_expiries_total",
    help: "Holds and leases expired: this process's requests held past quota.max_hold_seconds (hold), dead processes' leases (lease), overdue durable holds (durable_hold).",
    labelNames: ["what"],
  });
  const expiredLeases = expiries("lease");
  const expiredDurable = expiries("durable_hold");
  const expiredHolds = expiries("hold");
  // Counters are shown from 0 on, not from their first event: rate() needs the start.
  for (const child of [expiredLeases, expiredDurable, expiredHolds]) child.inc(0);

  return {
    account(kind): AccountMetrics {
      const held = holds(kind);
      const posted = posts(kind);
      const voided = voids(kind);
      const over = overshoots(kind);
      const overUnits = overshootUnits(kind);
      const synced = syncs(kind);
      const waited = waits(kind);
      const failed = syncFailures(kind);
      const withdrawn = withdrawals(kind);
      for (const child of [held, posted, voided, over, overUnits, failed, withdrawn]) child.inc(0);
      return {
        held: () => held.inc(),
        posted(charged, amount) {
          posted.inc();
          if (charged <= amount) return;
          over.inc();
          overUnits.inc(Number(charged - amount));
        },
        voided: () => voided.inc(),
        expired: () => expiredHolds.inc(),
        synced: (seconds) => synced.observe(seconds),
        waited: (seconds) => waited.observe(seconds),
        syncFailed: () => failed.inc(),
        withdrawn: () => withdrawn.inc(),
      };
    },
    expired(leases, durableHolds) {
      if (leases > 0) expiredLeases.inc(leases);
      if (durableHolds > 0) expiredDurable.inc(durableHolds);
    },
  };
}
