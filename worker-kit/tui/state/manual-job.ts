import {
  cardSchema,
  DISPOSITIONS,
  type Card,
  type ClaimedJob,
  type ClaimRequest,
  type CompleteRequest,
  type FailRequest,
  type WorkerUsage,
} from "../../wire/support.js";

// A job worked by hand (the TUI's job screen and `gateway support job ...`): what a support engineer claims,
// completes and fails with. Pure: no UI, no I/O, so the screen and the CLI twins build the same requests.

export type Disposition = (typeof DISPOSITIONS)[number];

/** A lease as long as the gateway allows: a person reads, thinks and types. */
export const MANUAL_LEASE_SECONDS = 300;

/**
 * A human spent nothing billable: no model or tool call, no token. The cost is a known zero ("0"), not null
 * (unknown), so the case's cost stays a number (docs/support.md, "Usage": a sum with an unknown part is unknown).
 */
export const MANUAL_USAGE: WorkerUsage = { model_calls: 0, tool_calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: "0" };

/** `f` gives the job back (retryable), `F` fails it for good. */
export const MANUAL_FAIL_CODES = { release: "manual_release", fail: "manual_fail" } as const;

export const manualWorkerId = (email: string) => `tui:${email}`;

export function manualClaimRequest(email: string, leaseSeconds = MANUAL_LEASE_SECONDS): ClaimRequest {
  return { limit: 1, lease_seconds: leaseSeconds, worker_id: manualWorkerId(email) };
}

export function nextDisposition(current: Disposition): Disposition {
  return DISPOSITIONS[(DISPOSITIONS.indexOf(current) + 1) % DISPOSITIONS.length]!;
}

export const EMPTY_CARD: Card = { problem: "", facts: [], hypotheses: [], checks: [], missing: [], next_step: "", confidence: 0 };

/** The text the card is edited as: the job's current card, else an empty one to fill in. */
export const cardJson = (card: Card | null): string => `${JSON.stringify(card ?? EMPTY_CARD, null, 2)}\n`;

export type CardParse = { ok: true; card: Card | null } | { ok: false; problem: string };

/** The edited card: `null` (the JSON literal) sends none; anything else must be a valid card. */
export function parseCardJson(text: string): CardParse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `card: not JSON (${(err as Error).message})` };
  }
  if (value === null) return { ok: true, card: null };
  const parsed = cardSchema.safeParse(value);
  if (parsed.success) return { ok: true, card: parsed.data };
  const issue = parsed.error.issues[0]!;
  const where = issue.path.length === 0 ? "card" : `card.${issue.path.map(String).join(".")}`;
  return { ok: false, problem: `${where}: ${issue.message}` };
}

export interface ManualAnswer {
  content: string;
  card: Card | null;
  disposition: Disposition;
}

export function manualCompleteRequest(job: Pick<ClaimedJob, "lease_token" | "revision">, answer: ManualAnswer): CompleteRequest {
  return {
    lease_token: job.lease_token,
    revision: job.revision,
    content: answer.content,
    card: answer.card,
    // A person cites no evidence rows: the card's facts must then name none either (the gateway checks it).
    evidence: [],
    usage: MANUAL_USAGE,
    disposition: answer.disposition,
  };
}

export function manualFailRequest(leaseToken: string, errorCode: string, retryable: boolean): FailRequest {
  return { lease_token: leaseToken, error_code: errorCode, retryable, usage: MANUAL_USAGE };
}
