import { setTimeout as sleep } from "node:timers/promises";
import type { Pool } from "../../src/db/pool.js";
import type { GatewayCluster } from "./crash-cluster.js";
import { clientLoops } from "./client-loops.js";

// Token transfers beside the crash tests' chat load (docs/api.md, "Token transfers"): users sending each other
// transfers through chosen processes, each send followed as a client must follow an uncertain outcome (the same
// key and payload again, on whichever process answers, until the record is final), and the proof that every
// transfer ended exactly once with its hold and its restoration equal to `applied`.

export interface TransferAnswer {
  process: number;
  generation: number;
  /** 0: no answer (connection refused or cut). */
  status: number;
  code?: string | null;
}

export interface TransferAttempt {
  key: string;
  sender: number;
  recipient: number;
  amount: number;
  /** Every answer, in order: the send, then its checks. */
  answers: TransferAnswer[];
  /** The last answer's record once final (200: completed or refused), or the refusal that wrote nothing. */
  final?: { status: number; id: string | null; state: string | null; applied: number | null; code: string | null };
}

interface Wire {
  id?: string;
  status?: string;
  applied?: number | null;
  error?: { code?: string | null };
}

/** Statuses of a send refused at once (a limit, the balance, validation): nothing written, nothing to follow. */
const REFUSED_AT_ONCE = new Set([400, 403, 409, 422]);

/**
 * Transfers among `users` (sessions and emails by user index), `amount` each, `clients` of them at once, each
 * client one every `everyMs`: client c's n-th goes from user (n + c) to the next one (client 1 the other way
 * round), sent to process `route(c, n)`; its checks go round-robin to the next processes. Each is followed
 * until final or `followMs` passed.
 */
export function startTransfers(opts: {
  cluster: GatewayCluster;
  label: string;
  users: { headers: Record<string, string>; email: string }[];
  amount: number;
  clients: number;
  everyMs: number;
  followMs: number;
  route: (client: number, n: number) => number;
}): { attempts: TransferAttempt[]; stop(): Promise<void> } {
  const attempts: TransferAttempt[] = [];

  async function post(index: number, attempt: TransferAttempt): Promise<TransferAnswer & { body?: Wire }> {
    const target = opts.cluster.current[index]!;
    const answer: TransferAnswer & { body?: Wire } = { process: index, generation: target.generation, status: 0 };
    try {
      const res = await fetch(`${target.url}/api/v1/user/token-transfers`, {
        method: "POST",
        headers: { ...opts.users[attempt.sender]!.headers, "content-type": "application/json" },
        body: JSON.stringify({ recipient: opts.users[attempt.recipient]!.email, amount: attempt.amount, idempotency_key: attempt.key }),
        signal: AbortSignal.timeout(10_000),
      });
      answer.status = res.status;
      answer.body = (await res.json()) as Wire;
      answer.code = answer.body.error?.code ?? null;
    } catch {
      // No answer (connection refused or cut): the status stays 0.
    }
    return answer;
  }

  async function follow(attempt: TransferAttempt, first: number): Promise<void> {
    const started = performance.now();
    for (let i = 0; performance.now() - started < opts.followMs; i++) {
      const index = (first + i) % opts.cluster.current.length;
      const { body, ...answer } = await post(index, attempt);
      attempt.answers.push(answer);
      if (answer.status === 200 || REFUSED_AT_ONCE.has(answer.status)) {
        attempt.final = {
          status: answer.status,
          id: body?.id ?? null,
          state: body?.status ?? null,
          applied: body?.applied ?? null,
          code: answer.code ?? null,
        };
        return;
      }
      // 202 (still pending: this check started its completion again), a 503, or no answer: ask again shortly.
      await sleep(answer.status === 202 ? 100 : 250);
    }
  }

  const n = opts.users.length;
  const loops = clientLoops({ clients: opts.clients, pauseMs: opts.everyMs }, async (client, i) => {
    const sender = (i + client) % n;
    const recipient = client % 2 === 0 ? (sender + 1) % n : (sender + n - 1) % n;
    const attempt: TransferAttempt = { key: `${opts.label}-${client}-${i}`, sender, recipient, amount: opts.amount, answers: [] };
    attempts.push(attempt);
    await follow(attempt, opts.route(client, i));
  });
  return { attempts, stop: loops.stop };
}

export interface TransferRecord {
  id: string;
  sender_id: string;
  idempotency_key: string;
  status: string;
  amount: string;
  applied: string | null;
  returned: string | null;
  hold_status: string | null;
  hold_charged: string | null;
  /** Holds of the reference `transfer:<id>`, and restorations of reference `<id>` (count and sum). */
  holds: number;
  restorations: number;
  restored: string;
}

/** Every transfer with its hold and its restorations. */
export async function readTransfers(pool: Pool): Promise<TransferRecord[]> {
  const { rows } = await pool.query<TransferRecord>(
    `select t.id::text, t.sender_id::text, t.idempotency_key, t.status, t.amount::text, t.applied::text, t.returned::text,
       h.status as hold_status, h.charged::text as hold_charged,
       (select count(*)::int from quota_holds x where x.request_id = 'transfer:' || t.id::text) as holds,
       (select count(*)::int from quota_restorations r where r.source = 'token_transfer' and r.reference = t.id::text) as restorations,
       (select coalesce(sum(r.amount), 0)::text from quota_restorations r where r.source = 'token_transfer' and r.reference = t.id::text) as restored
     from token_transfers t left join quota_holds h on h.id = t.hold_id order by t.created_at`,
  );
  return rows;
}

/**
 * The transfers that did not end exactly once: every attempt followed to a final answer; a refusal at once wrote
 * nothing; every record belongs to one attempt whose final answer is that record (200, same state and applied),
 * ended (completed or refused), its hold posted for `applied` (completed) or voided (refused), and the
 * recipient's restoration equal to `applied` (at most one, 0 for a refusal). Empty when all did.
 */
export function transferMismatches(attempts: TransferAttempt[], records: TransferRecord[], userIds: string[]): unknown[] {
  const wrong: unknown[] = [];
  const byKey = new Map<string, TransferRecord[]>();
  for (const r of records)
    byKey.set(`${r.sender_id} ${r.idempotency_key}`, [...(byKey.get(`${r.sender_id} ${r.idempotency_key}`) ?? []), r]);
  for (const attempt of attempts) {
    const found = byKey.get(`${userIds[attempt.sender]} ${attempt.key}`) ?? [];
    byKey.delete(`${userIds[attempt.sender]} ${attempt.key}`);
    const final = attempt.final;
    if (!final) {
      wrong.push({ attempt, reason: "never final", records: found });
      continue;
    }
    if (final.status !== 200) {
      if (found.length > 0) wrong.push({ attempt, reason: "refused at once but recorded", records: found });
      continue;
    }
    const [record] = found;
    const applied = final.state === "completed" ? String(final.applied) : "0";
    const ok =
      found.length === 1 &&
      record!.id === final.id &&
      record!.status === final.state &&
      (record!.status === "completed" || record!.status === "refused") &&
      (record!.applied ?? "0") === applied &&
      BigInt(applied) + BigInt(record!.returned ?? "0") === BigInt(record!.amount) &&
      record!.holds === 1 &&
      (record!.status === "completed"
        ? record!.hold_status === "posted" && record!.hold_charged === applied && record!.restorations === 1
        : record!.hold_status === "voided" && record!.restorations <= 1) &&
      record!.restored === applied;
    if (!ok) wrong.push({ attempt, reason: "ended wrong", records: found });
  }
  for (const unclaimed of byKey.values()) wrong.push({ attempt: null, reason: "a record nobody sent", records: unclaimed });
  return wrong;
}
