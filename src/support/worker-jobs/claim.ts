import { leaseClaimableJobs, lastMessages, type TranscriptRow } from "./claim-sql.js";
import type { Queryable } from "../../db/pool.js";
import { hashLeaseToken, newLeaseToken } from "./lease-token.js";
import { MAX_ATTEMPTS, type Card, type ClaimedJob, type ClaimRequest, type RequestFacts } from "@model-gateway/worker-kit/wire/support";

/** How many of a case's latest messages a claimed job carries; older ones are summed up by `history_truncated`. */
export const CLAIM_TRANSCRIPT_MESSAGES = 50;

/**
 * Leases up to `limit` claimable jobs (queued past their backoff, or leased past their expiry) to `worker_id`, each
 * under a fresh token (only its hash is stored), with the case context a worker needs. An empty list means nothing
 * is claimable now.
 */
export async function claimJobs(db: Queryable, request: ClaimRequest): Promise<ClaimedJob[]> {
  const tokens = Array.from({ length: request.limit }, newLeaseToken);
  const rows = await leaseClaimableJobs(db, {
    limit: request.limit,
    tokenHashes: tokens.map(hashLeaseToken),
    leaseSeconds: request.lease_seconds,
    workerId: request.worker_id,
    maxAttempts: MAX_ATTEMPTS,
  });
  if (rows.length === 0) return [];
  const transcripts = byCase(await lastMessages(db, [...new Set(rows.map((r) => r.case_id))], CLAIM_TRANSCRIPT_MESSAGES));
  return rows.map((row) => {
    const messages = transcripts.get(row.case_id) ?? [];
    return {
      id: row.id,
      kind: row.kind,
      case_id: row.case_id,
      revision: row.revision,
      attempt: row.attempts,
      lease_token: tokens[Number(row.n) - 1]!,
      lease_expires_at: row.lease_expires_at.toISOString(),
      context: {
        locale: row.locale,
        facts: row.facts as RequestFacts | null,
        card: row.card as Card | null,
        transcript: messages.map((m) => ({ role: m.role, content: m.content, created_at: m.created_at.toISOString() })),
        history_truncated: (messages[0]?.total ?? 0) > messages.length,
      },
    };
  });
}

function byCase(rows: TranscriptRow[]): Map<string, TranscriptRow[]> {
  const cases = new Map<string, TranscriptRow[]>();
  for (const row of rows) {
    const list = cases.get(row.case_id);
    if (list) list.push(row);
    else cases.set(row.case_id, [row]);
  }
  return cases;
}
