import { z } from "zod";
import { storedText } from "./text.js";

// The support workspace's wire shapes (spec "Support case structures"; docs/support.md): one pure module of zod
// schemas that the gateway's routes validate with and that worker-kit's typed client reads its types from
// (issue 16), so the two sides never drift. No I/O, no other import of src/.

/** The spec's bounds (spec "Other numeric limits"). */
export const LIST_LIMIT = { min: 1, max: 100, default: 20 } as const;
export const CLAIM_LIMIT = { min: 1, max: 5 } as const;
export const LEASE_SECONDS = { min: 30, max: 300 } as const;
export const MAX_ATTEMPTS = 3;

/** Bounds of what a worker or a user sends, so that one body cannot fill a case. */
export const MAX_CONTENT_CHARS = 20_000;
const MAX_ITEMS = 50;
const MAX_TEXT = 2_000;

const text = (max = MAX_TEXT) => storedText().min(1).max(max);

export const MESSAGE_ROLES = ["user", "assistant", "staff"] as const;

/** A card fact: `evidence_ids` must name evidence of the same completion. */
export const factSchema = z.strictObject({
  field: text(200),
  value: z.union([z.string().max(MAX_TEXT), z.number(), z.boolean(), z.null()]),
  evidence_ids: z.array(text(200)).max(MAX_ITEMS),
  observed_at: z.iso.datetime({ offset: true }).optional(),
  request_id: text(200).optional(),
});

export const cardSchema = z.strictObject({
  problem: z.string().max(MAX_TEXT),
  facts: z.array(factSchema).max(MAX_ITEMS),
  hypotheses: z.array(z.string().max(MAX_TEXT)).max(MAX_ITEMS),
  checks: z.array(z.string().max(MAX_TEXT)).max(MAX_ITEMS),
  missing: z.array(z.string().max(MAX_TEXT)).max(MAX_ITEMS),
  next_step: z.string().max(MAX_TEXT),
  confidence: z.number().min(0).max(1),
});
export type Card = z.infer<typeof cardSchema>;

export const evidenceSchema = z.strictObject({
  id: text(200),
  kind: text(100),
  /** What the evidence says: a bounded JSON value (a request fact, a log excerpt the worker was given). */
  content: z.unknown(),
});
export type Evidence = z.infer<typeof evidenceSchema>;

/** What a worker spent: `cost_usd` null when it did not know the price (never a made-up zero). */
export const workerUsageSchema = z.strictObject({
  model_calls: z.int().min(0).max(1_000_000),
  tool_calls: z.int().min(0).max(1_000_000),
  input_tokens: z.int().min(0),
  output_tokens: z.int().min(0),
  cost_usd: z
    .string()
    .regex(/^\d{1,12}(\.\d{1,9})?$/, { error: 'must be a decimal string such as "0.0123"' })
    .nullable(),
});
export type WorkerUsage = z.infer<typeof workerUsageSchema>;

/** The request facts a case snapshots from the request log (never payloads, mappings, credentials, IPs, upstream bodies). */
export const requestFactsSchema = z.strictObject({
  request_id: z.string(),
  route: z.string(),
  /** The wire shape the client spoke; "" when unknown. */
  client_protocol: z.string(),
  model: z.string(),
  status: z.int(),
  error_code: z.string().nullable(),
  error_class: z.string().nullable(),
  /** False when only the status is known (no gateway error code): the summary is then the status's. */
  error_detail_available: z.boolean(),
  error_summary_source: z.enum(["error_code", "status_fallback", "none"]),
  error_summary: z.string().nullable(),
  streamed: z.boolean(),
  input_tokens: z.int(),
  output_tokens: z.int(),
  cached_tokens: z.int(),
  quota_charged: z.int(),
  cost_usd: z.string().nullable(),
  received_at: z.string().nullable(),
  completed_at: z.string(),
  latency_ms: z.number(),
});
export type RequestFacts = z.infer<typeof requestFactsSchema>;

/** An incident's statuses, in the only order staff may move it (spec, "States and transitions"). */
export const INCIDENT_STATUSES = ["candidate", "confirmed", "resolved"] as const;

export const SUPPORT_JOB_KINDS = ["answer", "staff_draft", "operator_draft", "bug_draft"] as const;

/**
 * What a worker says its completion is: `answer` (publish it), `needs_staff` (publish nothing, ask staff:
 * the case goes to handoff), `no_answer` (nothing useful to say; nothing published). Drafts publish nothing
 * whatever the disposition: they are stored privately for staff.
 */
export const DISPOSITIONS = ["answer", "needs_staff", "no_answer"] as const;

export const claimRequestSchema = z.strictObject({
  limit: z.int().min(CLAIM_LIMIT.min).max(CLAIM_LIMIT.max),
  lease_seconds: z.int().min(LEASE_SECONDS.min).max(LEASE_SECONDS.max),
  worker_id: text(200),
});
export type ClaimRequest = z.infer<typeof claimRequestSchema>;

export const transcriptMessageSchema = z.strictObject({
  role: z.enum(MESSAGE_ROLES),
  content: z.string(),
  created_at: z.string(),
});

/** One claimed job with what a worker needs of its case. */
export const claimedJobSchema = z.strictObject({
  id: z.uuid(),
  kind: z.enum(SUPPORT_JOB_KINDS),
  case_id: z.uuid(),
  revision: z.int(),
  attempt: z.int().min(1).max(MAX_ATTEMPTS),
  lease_token: z.string(),
  lease_expires_at: z.string(),
  context: z.strictObject({
    locale: z.string(),
    facts: requestFactsSchema.nullable(),
    card: cardSchema.nullable(),
    transcript: z.array(transcriptMessageSchema),
    history_truncated: z.boolean(),
  }),
});
export type ClaimedJob = z.infer<typeof claimedJobSchema>;

export const claimResponseSchema = z.strictObject({ jobs: z.array(claimedJobSchema) });
export type ClaimResponse = z.infer<typeof claimResponseSchema>;

export const completeRequestSchema = z.strictObject({
  lease_token: text(200),
  revision: z.int().min(1),
  content: z.string().max(MAX_CONTENT_CHARS),
  card: cardSchema.nullable(),
  evidence: z.array(evidenceSchema).max(MAX_ITEMS),
  usage: workerUsageSchema,
  disposition: z.enum(DISPOSITIONS),
});
export type CompleteRequest = z.infer<typeof completeRequestSchema>;

/**
 * What became of a completion: `published` (the answer is a transcript message, or the draft is stored),
 * `discarded_stale` (the case moved to another revision), `discarded_hold` (staff hold the case),
 * `discarded_resolved` (the case was resolved), `recorded` (a disposition that publishes nothing). A lost lease is
 * an error (409), not an outcome.
 */
export const COMPLETION_OUTCOMES = ["published", "recorded", "discarded_stale", "discarded_hold", "discarded_resolved"] as const;

export const completeResponseSchema = z.strictObject({
  job_id: z.uuid(),
  outcome: z.enum(COMPLETION_OUTCOMES),
  /** The case's revision when the completion was judged. */
  case_revision: z.int(),
});
export type CompleteResponse = z.infer<typeof completeResponseSchema>;

export const failRequestSchema = z.strictObject({
  lease_token: text(200),
  error_code: text(100),
  retryable: z.boolean(),
  usage: workerUsageSchema.optional(),
});
export type FailRequest = z.infer<typeof failRequestSchema>;

export const failResponseSchema = z.strictObject({
  job_id: z.uuid(),
  /** `queued` again (with backoff) or `failed` for good (not retryable, or the third attempt). */
  status: z.enum(["queued", "failed"]),
  available_at: z.string().nullable(),
});
export type FailResponse = z.infer<typeof failResponseSchema>;
