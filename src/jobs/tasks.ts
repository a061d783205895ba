import { isUuid } from "../ids.js";
import type { Task, TaskList } from "graphile-worker";
import { pruneIdempotencyKeys } from "../balances/idempotency-sql.js";
import { ensureAhead, moveUnpartitioned } from "../analytics/partitions.js";
import { pruneRequestLogs } from "../analytics/retention-sql.js";
import type { SessionService } from "../auth/types.js";
import type { RetentionConfig } from "../config/schema.js";
import type { Pool } from "../db/pool.js";
import { pruneLedger, type QuotaLedger } from "../quota/index.js";
import { scanIncidents } from "../support/incidents/incidents.js";
import { sweepSupportJobs } from "../support/worker-jobs/sweep.js";
import type { Transfers } from "../transfers/transfers.js";
import { prunePreviews } from "../transfers/transfers-sql.js";

export interface JobDeps {
  sessions: SessionService;
  ledger: QuotaLedger;
  pool: Pool;
  /** The request log's database when it lives apart (analytics.database_url): its retention and the incidents' scan. */
  logPool?: Pool;
  retention: RetentionConfig;
  /** Days after today whose request-log partitions exist ahead (`analytics.partitions_ahead_days`). */
  partitionsAheadDays: number;
  /** Completes token transfers (src/transfers). */
  transfers: Pick<Transfers, "complete">;
}

/** Payload type of every task, declared once per task name. */
export interface TaskPayloads {
  prune_auth: Record<string, unknown>;
  expire_ledger: Record<string, unknown>;
  ledger_retention: Record<string, unknown>;
  log_partitions: Record<string, unknown>;
  support_sweep: Record<string, unknown>;
  support_incidents: Record<string, unknown>;
  complete_transfer: { id: string };
}

// Delivery is at least once: every task must be safe to run twice.

// Expired and revoked sessions, and login-attempt and transfer-preview windows that have ended.
function pruneAuth(deps: JobDeps): Task {
  return async (_payload, helpers) => {
    const now = new Date();
    const removed = await deps.sessions.pruneExpired(now);
    if (removed > 0) helpers.logger.info(`pruned ${removed} expired or revoked sessions`);
    const windows = await deps.sessions.pruneLoginAttempts(now);
    if (windows > 0) helpers.logger.info(`pruned ${windows} ended login-attempt windows`);
    const previews = await prunePreviews(deps.pool, now);
    if (previews > 0) helpers.logger.info(`pruned ${previews} ended transfer-preview windows`);
  };
}

// Returns the pending units of dead processes' leases and of durable holds past their expiry. Every serving
// process also runs this on its own timer (src/quota/expiry-sweep.ts), so it never depends on the worker.
function expireLedger(deps: JobDeps): Task {
  return async (_payload, helpers) => {
    const { fenced, leases, durable } = await deps.ledger.expire();
    if (fenced + leases + durable > 0)
      helpers.logger.info(`fenced ${fenced} silent processes; expired ${leases} abandoned leases and ${durable} durable holds`);
  };
}

// Rolls up and deletes the ledger's and the request log's history past their retention, and deletes the money
// calls' idempotency keys past theirs (docs/billing.md, "Retention"). Running it twice is harmless: the second run
// finds nothing older than its cutoff, and a run cut short (a batch per statement, each committed) leaves nothing
// half-deleted for the next to finish.
function ledgerRetention(deps: JobDeps): Task {
  return async (_payload, helpers) => {
    const { ledger_days, request_log_days, batch_rows } = deps.retention;
    const ledger = ledger_days > 0 ? await pruneLedger(deps.pool, ledger_days, batch_rows) : null;
    const log = request_log_days > 0 ? await pruneRequestLogs(deps.logPool ?? deps.pool, request_log_days, batch_rows) : null;
    const ledgerPart = ledger
      ? `${ledger.holds} resolved holds (rolled up) and ${ledger.leases} ended leases before ${ledger.cutoff}`
      : "no ledger rows (ledger_days 0: kept for ever)";
    const logPart = log
      ? `${log.rows} request-log rows (rolled up, ${log.partitions} day partitions dropped, ${log.deferred} left for the next run) before ${log.cutoff}`
      : "no request-log rows (request_log_days 0: kept for ever)";
    helpers.logger.info(`retention deleted ${ledgerPart}; ${logPart}`);
    // The money calls' keys: no balance depends on them, so they need no rollup (docs/billing.md, "Retention").
    if (deps.retention.idempotency_days > 0) {
      const pruned = await pruneIdempotencyKeys(deps.pool, deps.retention.idempotency_days, batch_rows);
      if (pruned.keys > 0) helpers.logger.info(`pruned ${pruned.keys} idempotency keys created before ${pruned.cutoff}`);
    }
  };
}

// Creates the request log's day partitions ahead on the log's database, and moves the rows of the log as it was before
// migration 0025 into them (src/analytics/partitions.ts) on each database that has such a table: the main one after
// an upgrade (with the log apart, those rows stay there; docs/operations.md, "The request log apart"). Both find done
// work done: a rerun, or a run on another process at once, creates and moves nothing twice.
function logPartitions(deps: JobDeps): Task {
  return async (_payload, helpers) => {
    const logPool = deps.logPool ?? deps.pool;
    const created = await ensureAhead(logPool, deps.partitionsAheadDays);
    if (created > 0) helpers.logger.info(`created ${created} request-log day partitions`);
    for (const pool of new Set([deps.pool, logPool])) {
      const moved = await moveUnpartitioned(pool, deps.retention.batch_rows);
      if (moved.rows > 0) {
        helpers.logger.info(
          `moved ${moved.rows} request-log rows into the partitioned log${moved.done ? "; the old table is dropped" : ""}`,
        );
      }
    }
  };
}

// Support jobs whose lease expired go back to the queue (or fail at the last attempt), and queued jobs of resolved
// cases or past revisions are discarded (docs/support.md, "The sweep"). Each statement finds nothing done twice.
function supportSweep(deps: JobDeps): Task {
  return async (_payload, helpers) => {
    const { requeued, failed, discarded } = await sweepSupportJobs(deps.pool);
    if (requeued + failed + discarded > 0) {
      helpers.logger.info(`support sweep: ${requeued} expired leases requeued, ${failed} failed, ${discarded} obsolete jobs discarded`);
    }
  };
}

// Raises or refreshes incident candidates from the case clusters and the request log, and links the cases they
// cover (docs/support.md, "Incidents"). Upserts on one unresolved incident per signature: a rerun updates, never
// duplicates.
function supportIncidents(deps: JobDeps): Task {
  return async (_payload, helpers) => {
    const { fromCases, fromLog, linked } = await scanIncidents(deps.pool, deps.logPool ?? deps.pool);
    if (fromCases + fromLog + linked > 0) {
      helpers.logger.info(`support incidents: ${fromCases} from case clusters, ${fromLog} from the request log, ${linked} cases linked`);
    }
  };
}

// Completes one token transfer (src/transfers/transfers-sql.ts), the backstop of the sending process's own
// completion (src/transfers/completion.ts) for a process that stopped first: it locks the transfer's record first and
// acts only on a pending one, so a second run, or a run beside that completion, finds it ended and changes nothing.
function completeTransfer(deps: JobDeps): Task {
  return async (payload, helpers) => {
    const id = (payload as Partial<TaskPayloads["complete_transfer"]> | null)?.id;
    if (typeof id !== "string" || !isUuid(id)) {
      helpers.logger.error("complete_transfer: payload without a transfer id, dropped");
      return;
    }
    const transfer = await deps.transfers.complete(id);
    if (transfer) helpers.logger.info(`transfer ${id}: ${transfer.status}${transfer.reason ? ` (${transfer.reason})` : ""}`);
  };
}

export function taskList(deps: JobDeps): TaskList & Record<keyof TaskPayloads, Task> {
  return {
    prune_auth: pruneAuth(deps),
    expire_ledger: expireLedger(deps),
    ledger_retention: ledgerRetention(deps),
    log_partitions: logPartitions(deps),
    support_sweep: supportSweep(deps),
    support_incidents: supportIncidents(deps),
    complete_transfer: completeTransfer(deps),
  };
}

// jobKey keeps one pending run per task even when several gateway processes share the schedule.
export const crontab = [
  "*/15 * * * * prune_auth ?jobKey=prune_auth&max=3",
  "* * * * * expire_ledger ?jobKey=expire_ledger&max=3",
  "* * * * * support_sweep ?jobKey=support_sweep&max=3",
  "*/5 * * * * support_incidents ?jobKey=support_incidents&max=3",
  // Daily at 03:17 UTC: night in Europe, evening in the Americas, and not on the hour, when schedules pile up.
  // Its batches keep every statement short, so the hour matters little.
  "17 3 * * * ledger_retention ?jobKey=ledger_retention&max=3",
  // Hourly although a day's partition is made days ahead: after an upgrade to migration 0025 the move of the old
  // rows starts within the hour, and a day missed while the worker was down is made up soon.
  "41 * * * * log_partitions ?jobKey=log_partitions&max=3",
].join("\n");
