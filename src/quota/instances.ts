import type { Pool } from "../db/pool.js";
import type { Instance } from "./types.js";

// An upsert rather than an update: a process that was silent long enough for its row to be forgotten
// (see the expiry in ledger.ts) is known again on its next beat instead of staying invisible.
const HEARTBEAT = `
insert into gateway_instances (id) values ($1::uuid)
on conflict (id) do update set last_seen_at = now()`;

/**
 * Makes this process known to the ledger: holds it takes stay pending while its heartbeat is fresh.
 * stop() deletes the row so that any hold it left unresolved expires on the next expiry run.
 */
export async function registerInstance(
  pool: Pool,
  opts: { heartbeatMs?: number; onError?: (err: Error) => void } = {},
): Promise<Instance> {
  const { rows } = await pool.query<{ id: string }>("insert into gateway_instances default values returning id");
  const id = rows[0]!.id;
  let beating: Promise<void> | undefined;
  const beat = () => {
    // A slow database must not pile up beats on the pool.
    beating ??= pool
      .query({ name: "quota_heartbeat", text: HEARTBEAT, values: [id] })
      .then(
        () => undefined,
        (err: Error) => opts.onError?.(err),
      )
      .finally(() => {
        beating = undefined;
      });
  };
  const timer = setInterval(beat, opts.heartbeatMs ?? 15_000);
  timer.unref();
  let stopping: Promise<void> | undefined;
  return {
    id,
    stop: () =>
      (stopping ??= (async () => {
        clearInterval(timer);
        // A beat still in flight would otherwise re-create the row after the delete.
        await beating;
        await pool.query("delete from gateway_instances where id = $1", [id]);
      })()),
  };
}
