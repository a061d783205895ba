import type { Queryable } from "../../db/pool.js";
import { MAX_ATTEMPTS } from "@model-gateway/worker-kit/wire/support";

// The sweep's statements (docs/support.md, "The sweep"). Each is idempotent: a second run finds nothing to do.
// SKIP LOCKED leaves a job a completion holds right now to that completion.

// Leases past their expiry that no claim has taken over (./claim-sql.ts takes them without waiting for the sweep):
// queued, claimable at once as the claim would have taken them (free since the lease's end: the lease was the
// wait), or failed at the last attempt, which the claim leaves here.
const EXPIRE_LEASES = `
with expired as (
  select id from support_jobs where status = 'leased' and lease_expires_at <= now() for update skip locked
)
update support_jobs j set
  status = case when j.attempts >= $1 then 'failed' else 'queued' end,
  available_at = case when j.attempts >= $1 then j.available_at else j.lease_expires_at end,
  error_code = 'lease_expired', lease_expires_at = null, worker_id = null,
  finished_at = case when j.attempts >= $1 then now() end, updated_at = now()
from expired where j.id = expired.id
returning j.status`;

export async function expireLeases(db: Queryable): Promise<{ requeued: number; failed: number }> {
  const { rows } = await db.query<{ status: string }>({ name: "support_expire_leases", text: EXPIRE_LEASES, values: [MAX_ATTEMPTS] });
  const failed = rows.filter((r) => r.status === "failed").length;
  return { requeued: rows.length - failed, failed };
}

// Queued jobs nobody should do any more: of a resolved case, or made for a revision the case has moved past (the
// claim skips them; this ends them so the queue does not keep them). The hash of an earlier, expired lease goes:
// its token is told `lease_lost`, not this outcome, which no completion produced.
const DISCARD_OBSOLETE = `
with obsolete as (
  select j.id, case when c.status = 'resolved' then 'discarded_resolved' else 'discarded_stale' end as outcome, c.revision
  from support_jobs j join support_cases c on c.id = j.case_id
  where j.status = 'queued' and (c.status = 'resolved' or c.revision <> j.revision)
  for update of j skip locked
)
update support_jobs j set status = 'discarded', lease_token_hash = null,
  outcome = jsonb_build_object('job_id', j.id, 'outcome', obsolete.outcome, 'case_revision', obsolete.revision),
  finished_at = now(), updated_at = now()
from obsolete where j.id = obsolete.id`;

export async function discardObsoleteJobs(db: Queryable): Promise<number> {
  const { rowCount } = await db.query({ name: "support_discard_obsolete", text: DISCARD_OBSOLETE });
  return rowCount ?? 0;
}
