import type { Queryable } from "../db/pool.js";

// The request log against the ledger (docs/billing.md, "Reconciliation"): with the log apart, the charge commits on
// the main database and its row follows through the outbox, so the two are compared rather than assumed equal.
// For a time range: every resolved hold of a request (posted or voided, main) has its log row in the analytics
// database or its record still in the outbox, with the same charge; every charged log row has its posted hold.
// Also right when the log shares the main database (the outbox is then empty).

// The holds of requests resolved in [$1, $2): lease holds (request id = the log's) and video jobs' durable holds
// (the job's submission id); transfers' and resets' holds have no log row.
const HOLDS = `
select coalesce(j.request_id, h.request_id) as request_id, coalesce(h.charged, 0)::text as charged
from quota_holds h left join video_jobs j on j.hold_id = h.id
where h.status in ('posted', 'voided') and h.resolved_at >= $1 and h.resolved_at < $2
  and (h.lease_id is not null or j.id is not null)`;

// Log rows are written when a request resolves, before its hold's sync commits: a day either side finds the row
// of every hold in the range, and names a time range for the partitions to prune.
const ROWS_OF = `
select request_id, quota_charged::text as charged from request_logs
where request_id = any($1::text[]) and created_at >= $2::timestamptz - interval '1 day' and created_at < $3::timestamptz + interval '1 day'`;
const CHARGED_ROWS = `
select request_id, quota_charged::text as charged from request_logs where created_at >= $1 and created_at < $2 and quota_charged > 0`;
const HOLDS_OF = `
select coalesce(j.request_id, h.request_id) as request_id, coalesce(h.charged, 0)::text as charged
from quota_holds h left join video_jobs j on j.hold_id = h.id
where h.status = 'posted' and (h.request_id = any($1::text[]) or j.request_id = any($1::text[]))`;
// The outbox in id order: an insert, then the rewrite of a refund.
const OUTBOX = `
select record->>'request_id' as request_id, record->>'quota_charged' as charged from request_log_outbox order by id`;

export type LogDifferenceKind = "row_missing" | "charge_differs" | "hold_missing";

export interface LogDifference {
  requestId: string;
  kind: LogDifferenceKind;
  /** The hold's charge (0 voided); null without a hold. */
  held: bigint | null;
  /** The log's charge (its row, or its record in the outbox); null without either. */
  logged: bigint | null;
}

export interface LogReconciliation {
  from: Date;
  to: Date;
  /** Resolved holds of requests in the range, and those whose row is still in the outbox. */
  holds: number;
  inOutbox: number;
  /** Σ charged of those holds, and Σ of their rows' (or records') charges. */
  heldTotal: bigint;
  loggedTotal: bigint;
  differences: LogDifference[];
}

type Charges = Map<string, bigint>;
const chargesOf = (rows: { request_id: string; charged: string }[]): Charges => new Map(rows.map((r) => [r.request_id, BigInt(r.charged)]));

/** What the outbox will write, by request id: the inserts' charges with later rewrites applied (the last one wins). */
async function outboxCharges(main: Queryable): Promise<Charges> {
  return chargesOf((await main.query<{ request_id: string; charged: string }>(OUTBOX)).rows);
}

/** Compares the ledger (`main`) with the request log (`log`, the analytics database or the main one) over [from, to). */
export async function reconcileLog(main: Queryable, log: Queryable, from: Date, to: Date): Promise<LogReconciliation> {
  const holds = chargesOf((await main.query<{ request_id: string; charged: string }>(HOLDS, [from, to])).rows);
  const ids = [...holds.keys()];
  const rows = chargesOf((await log.query<{ request_id: string; charged: string }>(ROWS_OF, [ids, from, to])).rows);
  const outbox = await outboxCharges(main);
  const differences: LogDifference[] = [];
  let heldTotal = 0n;
  let loggedTotal = 0n;
  let inOutbox = 0;
  for (const [requestId, held] of holds) {
    heldTotal += held;
    const pending = outbox.get(requestId);
    if (pending !== undefined) inOutbox++;
    const logged = pending ?? rows.get(requestId) ?? null;
    if (logged === null) differences.push({ requestId, kind: "row_missing", held, logged });
    else {
      loggedTotal += logged;
      if (logged !== held) differences.push({ requestId, kind: "charge_differs", held, logged });
    }
  }
  const charged = chargesOf((await log.query<{ request_id: string; charged: string }>(CHARGED_ROWS, [from, to])).rows);
  const unheld = [...charged.keys()].filter((id) => !holds.has(id));
  const posted = chargesOf((await main.query<{ request_id: string; charged: string }>(HOLDS_OF, [unheld])).rows);
  for (const requestId of unheld) {
    if (!posted.has(requestId)) differences.push({ requestId, kind: "hold_missing", held: null, logged: charged.get(requestId)! });
  }
  return { from, to, holds: holds.size, inOutbox, heldTotal, loggedTotal, differences };
}
