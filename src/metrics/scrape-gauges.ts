import { Counter, Gauge, type Registry } from "prom-client";
import type { AccountStats, ScrapeSources } from "./recorders.js";

// Numbers their owners keep anyway (the request-log writer's queue, the body budget, the database's health, the
// ledger's leases), read when Prometheus scrapes: nothing on the hot path updates a gauge.

export function scrapeGauges(registry: Registry, sources: () => ScrapeSources | undefined): void {
  const registers = [registry];
  const gauge = (name: string, help: string, read: (s: ScrapeSources) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const s = sources();
        if (s) this.set(read(s));
      },
    });
  // A count its owner keeps from the start of the process, exposed as the counter it is.
  const total = (name: string, help: string, read: (s: ScrapeSources) => number) =>
    new Counter({
      name,
      help,
      registers,
      collect() {
        const s = sources();
        if (!s) return;
        this.reset();
        this.inc(read(s));
      },
    });
  const byKind = (name: string, help: string, read: (a: AccountStats) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ["account_kind"],
      registers,
      collect() {
        for (const account of sources()?.ledger.stats().accounts ?? []) this.set({ account_kind: account.kind }, read(account));
      },
    });

  gauge(
    "gateway_request_log_queue_rows",
    "Request-log rows waiting to be written (buffered and in flight).",
    (s) => s.requestLog.stats().buffered,
  );
  total(
    "gateway_request_log_dropped_rows_total",
    "Request-log rows dropped (the buffer full while the database was away, a batch it rejected, shutdown's grace over).",
    (s) => s.requestLog.stats().dropped,
  );
  outboxGauges(gauge, total);
  gauge("gateway_body_budget_in_use_bytes", "Bytes of large request bodies reserved now (systemone.admission_budget_bytes).", (s) =>
    s.bodyBudget.inUse(),
  );
  gauge("gateway_body_budget_capacity_bytes", "The body budget's size.", (s) => s.bodyBudget.capacity);

  gauge("gateway_database_up", "1 while statements succeed, 0 from the first transient fault until the next success.", (s) =>
    s.health.stats().up ? 1 : 0,
  );
  total(
    "gateway_database_outages_total",
    "Database faults that lasted past the grace (each logged once).",
    (s) => s.health.stats().outages,
  );
  total("gateway_database_blips_total", "Database faults a retry cured within the grace (not logged).", (s) => s.health.stats().blips);
  gauge("gateway_database_down_seconds", "Seconds of the current database fault (0 while up).", (s) => s.health.stats().downMs / 1000);
  total("gateway_database_down_seconds_total", "Seconds of every database outage that ended.", (s) => s.health.stats().totalDownMs / 1000);

  gauge(
    "gateway_ledger_settlements_unsynced",
    "Settlements of this process not yet committed to the ledger.",
    (s) => s.ledger.stats().unsynced,
  );
  byKind("gateway_ledger_leases", "Open leases (escrows) of this process.", (a) => a.leases);
  byKind("gateway_ledger_holds_in_flight", "Requests of this process holding units now.", (a) => a.holds);
  byKind("gateway_ledger_held_units", "Units held by this process's requests in flight.", (a) => Number(a.held));
  byKind("gateway_ledger_free_units", "Units leased to this process that no request holds.", (a) => Number(a.free));
}

type Reader = (name: string, help: string, read: (s: ScrapeSources) => number) => unknown;

/** The request log's outbox (analytics.database_url): 0 when the log shares the main database. */
function outboxGauges(gauge: Reader, total: Reader): void {
  gauge(
    "gateway_request_log_outbox_rows",
    "Request-log records in the outbox on the main database, not yet in the analytics database (analytics.database_url).",
    (s) => s.outbox?.stats().depth ?? 0,
  );
  gauge(
    "gateway_request_log_outbox_lag_seconds",
    "Age of the oldest record in the request log's outbox (0 when empty).",
    (s) => (s.outbox?.stats().lagMs ?? 0) / 1000,
  );
  total(
    "gateway_request_log_outbox_quarantined_total",
    "Outbox records the analytics database refused as data, moved to request_log_outbox_quarantine by this process.",
    (s) => s.outbox?.stats().quarantined ?? 0,
  );
}
