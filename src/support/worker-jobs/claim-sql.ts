import type { Queryable } from "../../db/pool.js";

// The claim's statements (docs/support.md, "Claiming"). Jobs are our own rows, taken with FOR UPDATE SKIP LOCKED
// so that concurrent claims never lease one job twice and never wait for each other.

export interface ClaimedRow {
  id: string;
  kind: "answer" | "staff_draft" | "operator_draft" | "bug_draft";
  case_id: string;
  revision: number;
  attempts: number;
  lease_expires_at: Date;
  /** Which of the offered token hashes the job got (1-based). */
  n: string;
  locale: string;
  facts: unknown;
  card: unknown;
}

// Only jobs still worth doing are leased: of an open case, at the case's revision (the sweep discards the rest,
// ./sweep-sql.ts), below the attempt cap; an answer of a case staff hold waits for the resume (it could not
// publish, and drafts are what staff want meanwhile). A job is claimable when it is queued and its backoff is over,
// or when its lease has expired (a queue's visibility timeout): the claim takes it at once, in this one statement,
// with no sweep run first. Taking it over records what the sweep would have (`lease_expired`, free since the
// lease's end), so the job reads the same whichever came first; the old token's hash is replaced, so its holder's
// complete or fail is told `lease_lost`. An expired lease at the last attempt is not claimable: the sweep fails it.
// The numbering hands each job one of the offered token hashes.
const CLAIM = `
with picked as (
  select j.id, case when j.status = 'leased' then j.lease_expires_at else j.available_at end as free_at, j.created_at
  from support_jobs j
  join support_cases c on c.id = j.case_id
  where ((j.status = 'queued' and j.available_at <= now()) or (j.status = 'leased' and j.lease_expires_at <= now()))
    and j.attempts < $5
    and c.status = 'open' and c.revision = j.revision and not (j.kind = 'answer' and c.staff_hold)
  order by free_at, j.created_at
  limit $1
  for update of j skip locked
), numbered as (
  select id, row_number() over (order by free_at, created_at) as n from picked
)
update support_jobs j
set status = 'leased', attempts = j.attempts + 1, lease_token_hash = ($2::text[])[numbered.n],
    lease_expires_at = now() + make_interval(secs => $3::int), worker_id = $4, updated_at = now(),
    error_code = case when j.status = 'leased' then 'lease_expired' else j.error_code end,
    available_at = case when j.status = 'leased' then j.lease_expires_at else j.available_at end
from numbered, support_cases c
where j.id = numbered.id and c.id = j.case_id
returning j.id, j.kind, j.case_id, j.revision, j.attempts, j.lease_expires_at, numbered.n, c.locale, c.facts, c.card`;

export async function leaseClaimableJobs(
  db: Queryable,
  claim: { limit: number; tokenHashes: string[]; leaseSeconds: number; workerId: string; maxAttempts: number },
): Promise<ClaimedRow[]> {
  const { rows } = await db.query<ClaimedRow>({
    name: "support_claim_jobs",
    text: CLAIM,
    values: [claim.limit, claim.tokenHashes, claim.leaseSeconds, claim.workerId, claim.maxAttempts],
  });
  return rows;
}

export interface TranscriptRow {
  case_id: string;
  role: "user" | "assistant" | "staff";
  content: string;
  created_at: Date;
  total: number;
}

// The last `$2` messages of each case, oldest first, with how many the case has (so the worker knows the
// history was cut).
const TRANSCRIPTS = `
select case_id, role, content, created_at, total from (
  select case_id, role, content, created_at, id,
         row_number() over (partition by case_id order by id desc) as rn,
         (count(*) over (partition by case_id))::int as total
  from support_messages where case_id = any($1::uuid[])
) m
where rn <= $2
order by case_id, id`;

export async function lastMessages(db: Queryable, caseIds: string[], perCase: number): Promise<TranscriptRow[]> {
  const { rows } = await db.query<TranscriptRow>({ name: "support_last_messages", text: TRANSCRIPTS, values: [caseIds, perCase] });
  return rows;
}
