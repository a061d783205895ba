import { isTransientDbError } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool, TimedQuery } from "../db/pool.js";
import type { Instance } from "./types.js";

// An upsert rather than an update: a process that was silent long enough for its row to be forgotten
// (see the expiry in expire-sql.ts) is known again on its next beat instead of staying invisible.
const HEARTBEAT = `
insert into gateway_instances (id) values ($1::uuid)
on conflict (id) do update set last_seen_at = now()`;

export interface InstanceOptions {
  heartbeatMs: number;
  /** Another process expires this one's leases once its heartbeat is this old (quota.instance_timeout_seconds). */
  timeoutMs: number;
  /** A beat whose answer takes longer is abandoned (the next one comes anyway). */
  statementTimeoutMs?: number;
  /** Transient failures of a beat are reported here (once per outage) instead of to onError. */
  health?: DatabaseHealth;
  onError?: (err: Error) => void;
}

/**
 * Makes this process known to the ledger: its leases stay pending while its heartbeat is fresh. stop() deletes
 * the row so that anything it left unresolved expires on the next expiry run.
 *
 * Fencing: the database marks the heartbeat with its own clock when the beat commits, which is no earlier than
 * when the beat was sent; so until `timeoutMs` after sending the last acknowledged beat, no other process can
 * have expired this one's leases. A lease admits from its free units only while that is comfortably so
 * (`fresh()`: one heartbeat interval of margin); otherwise it asks the database, whose answer says whether
 * the lease is still live. A process stalled past the timeout (a long pause, a failover) thus never admits
 * from units that were given back.
 */
export async function registerInstance(pool: Pool, opts: InstanceOptions): Promise<Instance> {
  const sentAt = performance.now();
  const { rows } = await pool.query<{ id: string }>("insert into gateway_instances default values returning id");
  const id = rows[0]!.id;
  let ackedSentAt = sentAt;
  const freshForMs = opts.timeoutMs - opts.heartbeatMs;
  let beating: Promise<void> | undefined;
  const beaten = (at: number) => {
    if (at > ackedSentAt) ackedSentAt = at;
  };
  const beat = () => {
    const at = performance.now();
    // A slow database must not pile up beats on the pool.
    const query: TimedQuery = { name: "quota_heartbeat", text: HEARTBEAT, values: [id], query_timeout: opts.statementTimeoutMs };
    beating ??= pool
      .query(query)
      .then(
        () => {
          beaten(at);
          opts.health?.ok();
        },
        (err: Error) => {
          if (opts.health && isTransientDbError(err)) opts.health.failed(err, "heartbeat");
          else opts.onError?.(err);
        },
      )
      .finally(() => {
        beating = undefined;
      });
  };
  const timer = setInterval(beat, opts.heartbeatMs);
  timer.unref();
  let stopping: Promise<void> | undefined;
  return {
    id,
    fresh: () => performance.now() - ackedSentAt < freshForMs,
    beaten,
    stop: () =>
      (stopping ??= (async () => {
        clearInterval(timer);
        // A beat still in flight would otherwise re-create the row after the delete.
        await beating;
        await pool.query("delete from gateway_instances where id = $1", [id]);
      })()),
  };
}
