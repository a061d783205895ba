import type { Pool } from "../../src/db/pool.js";
import { parseUsd } from "../../src/billing/usd.js";
import type { GatewayCluster, Outcome } from "./crash-cluster.js";
import { clientLoops } from "./client-loops.js";

// Reseller pay-as-you-go traffic for the crash and fault tests (docs/billing.md, "Reseller pay-as-you-go"):
// clients sending evaluations (`POST /v1/systemone`) with a reseller key over a cluster, and the proof that every
// evaluation a client received was posted once on the USD balance with the price its answer named, and that the
// balance agrees with the request log.

export interface EvaluationLoadOptions {
  cluster: GatewayCluster;
  /** A reseller key whose user has a credited balance. */
  key: string;
  /** An evaluation model with `reseller_price`. */
  model: string;
  clients: number;
  pauseMs: number;
  /** Which process a client's requests go to; by default round-robin over the cluster. */
  route?: (client: number) => number;
  /** The number of the first client (so that the outcomes of several loads stay apart). */
  firstClient?: number;
}

export interface EvaluationLoad {
  outcomes: Outcome[];
  stop(): Promise<void>;
}

const QUESTIONS = {
  polite: { type: "noul", instructions: "Is the reply polite?" },
  tone: { type: "choice", criteria: { formal: "formal register", casual: "casual register" } },
};

interface Answer {
  usage?: { input_tokens: number; output_tokens: number; cost?: number };
  error?: { code?: string | null };
}

/** Evaluations (plain HTTP: no official SDK speaks the evaluation service), each client one at a time, no retries. */
export function startEvaluationLoad(opts: EvaluationLoadOptions): EvaluationLoad {
  const outcomes: Outcome[] = [];
  let turn = 0;

  async function one(client: number, n: number): Promise<void> {
    const index = opts.route ? opts.route(client) : turn++ % opts.cluster.current.length;
    const target = opts.cluster.current[index]!;
    const out: Outcome = {
      client,
      user: 0,
      process: index,
      generation: target.generation,
      kind: "evaluation",
      startedAt: performance.now(),
      endedAt: 0,
      status: 0,
      requestId: null,
      completed: false,
      usageTotal: null,
    };
    outcomes.push(out);
    // Each request its own state, so that the evaluator's answers (and the prices) vary.
    const body = { model: opts.model, state: { transcript: [`client ${client}`, `request ${n}: how did it go?`] }, questions: QUESTIONS };
    try {
      const res = await fetch(`${target.url}/v1/systemone`, {
        method: "POST",
        headers: { authorization: `Bearer ${opts.key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      out.status = res.status;
      out.requestId = res.headers.get("x-request-id");
      out.charge = res.headers.get("x-gateway-charge");
      out.chargeUsd = res.headers.get("x-gateway-charge-usd");
      out.retryAfter = res.headers.get("retry-after");
      const answer = (await res.json()) as Answer;
      out.answeredAt = performance.now();
      if (res.status === 200 && answer.usage) {
        out.usageTotal = answer.usage.input_tokens;
        out.costUsd = answer.usage.cost;
        out.completed = true;
      } else {
        out.errorCode = answer.error?.code ?? null;
      }
    } catch (err) {
      out.error = err instanceof Error ? `${err.constructor.name}: ${err.message}` : String(err);
    } finally {
      out.endedAt = performance.now();
    }
  }

  const loops = clientLoops({ clients: opts.clients, first: opts.firstClient, pauseMs: opts.pauseMs }, one);
  return { outcomes, stop: loops.stop };
}

export interface ResellerRows {
  /** The user's `reseller_usd` account, in nano-dollars. */
  account: { credits: bigint; posted: bigint; pending: bigint } | undefined;
  /** Its holds by request id. */
  holds: Map<string, { status: string; charged: bigint | null }[]>;
  /** The user's request-log rows by request id. */
  logs: Map<string, { status: number; quotaCharged: string; costUsd: string | null }[]>;
}

/** The reseller user's USD account, its holds and the user's request log, in one snapshot. */
export async function readReseller(pool: Pool, userId: string): Promise<ResellerRows> {
  const { rows } = await pool.query<{
    account: { credits: string; posted: string; pending: string } | null;
    holds: { request_id: string; status: string; charged: string | null }[];
    logs: { request_id: string; status: number; quota_charged: string; cost_usd: string | null }[];
  }>(
    `select
       (select json_build_object('credits', credits::text, 'posted', debits_posted::text, 'pending', debits_pending::text)
          from quota_account_balances where user_id = $1 and kind = 'reseller_usd') as account,
       (select coalesce(json_agg(json_build_object('request_id', h.request_id, 'status', h.status, 'charged', h.charged::text)), '[]')
          from quota_holds h join quota_accounts a on a.id = h.account_id where a.user_id = $1 and a.kind = 'reseller_usd') as holds,
       (select coalesce(json_agg(json_build_object('request_id', request_id, 'status', status, 'quota_charged', quota_charged::text,
          'cost_usd', cost_usd::text)), '[]') from request_logs where user_id = $1) as logs`,
    [userId],
  );
  const { account, holds, logs } = rows[0]!;
  const byId = <T>(list: T[], id: (t: T) => string) => {
    const map = new Map<string, T[]>();
    for (const item of list) map.set(id(item), [...(map.get(id(item)) ?? []), item]);
    return map;
  };
  return {
    account: account ? { credits: BigInt(account.credits), posted: BigInt(account.posted), pending: BigInt(account.pending) } : undefined,
    holds: byId(
      holds.map((h) => ({ requestId: h.request_id, status: h.status, charged: h.charged === null ? null : BigInt(h.charged) })),
      (h) => h.requestId,
    ),
    logs: byId(
      logs.map((l) => ({ requestId: l.request_id, status: l.status, quotaCharged: l.quota_charged, costUsd: l.cost_usd })),
      (l) => l.requestId,
    ),
  };
}

/** A cost_usd or x-gateway-charge-usd text as nano-dollars (null when absent or malformed). */
const nanoOf = (usd: string | null | undefined) => (usd === null || usd === undefined ? null : parseUsd(usd));

/**
 * The evaluations a client received in full (200 with usage) that are not posted exactly once on the USD balance
 * at the price their answer named (`x-gateway-charge-usd`, the same as `usage.cost`), with one 200 request-log row
 * whose `cost_usd` is that price and whose `quota_charged` is 0 (and `x-gateway-charge: 0`). Empty when all are.
 */
export function evaluationsUncharged(outcomes: Outcome[], rows: ResellerRows): unknown[] {
  return outcomes
    .filter((o) => o.kind === "evaluation" && o.completed)
    .filter((o) => {
      const holds = rows.holds.get(o.requestId!) ?? [];
      const logs = rows.logs.get(o.requestId!) ?? [];
      const price = nanoOf(o.chargeUsd);
      return (
        price === null ||
        price === 0n ||
        o.costUsd !== Number(o.chargeUsd) ||
        o.charge !== "0" ||
        holds.length !== 1 ||
        holds[0]!.status !== "posted" ||
        holds[0]!.charged !== price ||
        logs.length !== 1 ||
        logs[0]!.status !== 200 ||
        logs[0]!.quotaCharged !== "0" ||
        nanoOf(logs[0]!.costUsd) !== price
      );
    })
    .map((o) => ({ outcome: o, holds: rows.holds.get(o.requestId!), logs: rows.logs.get(o.requestId!) }));
}

/**
 * How the balance reconciles: nothing reserved, what was spent equals the posted holds and the log's `cost_usd`,
 * every hold resolved and each request's row agreeing with its hold (a void costs nothing), and the credits are
 * what was credited. `mismatches` lists the requests whose row and hold disagree.
 */
export function resellerBalance(rows: ResellerRows, creditedNano: bigint) {
  let holdsPosted = 0n;
  let logged = 0n;
  const mismatches: unknown[] = [];
  for (const [requestId, holds] of rows.holds) {
    const logs = rows.logs.get(requestId) ?? [];
    const charged = holds.filter((h) => h.status === "posted").reduce((sum, h) => sum + h.charged!, 0n);
    holdsPosted += charged;
    const cost = logs.length === 1 ? (nanoOf(logs[0]!.costUsd) ?? 0n) : null;
    if (holds.length !== 1 || !["posted", "voided"].includes(holds[0]!.status) || cost !== charged || logs[0]!.quotaCharged !== "0") {
      mismatches.push({ requestId, holds, logs });
    }
  }
  for (const list of rows.logs.values()) for (const l of list) logged += nanoOf(l.costUsd) ?? 0n;
  return {
    credits: rows.account?.credits,
    credited: creditedNano,
    posted: rows.account?.posted,
    holdsPosted,
    logged,
    pending: rows.account?.pending,
    mismatches,
  };
}
