import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, jsonb, numeric, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { users } from "../auth/schema.js";
import { SUPPORT_JOB_KINDS } from "./wire.js";

// The support workspace's tables (docs/support.md). No language model runs in the gateway: cases gather a cited
// request's facts from the request log, jobs are leased to external workers through the internal endpoints, and
// staff hold, draft and resolve. Leased jobs are rows of our own, claimed with FOR UPDATE SKIP LOCKED (a lease
// token and its expiry per claim); graphile-worker only drives the asynchronous side (sweeps, aggregation).

// Usage a worker reports, per job and summed per case: `cost_usd` null means unknown (a price the worker did not
// have), and a sum with an unknown part stays unknown, never zero.
const usageColumns = () => ({
  modelCalls: integer("model_calls").notNull().default(0),
  toolCalls: integer("tool_calls").notNull().default(0),
  inputTokens: bigint("input_tokens", { mode: "bigint" })
    .notNull()
    .default(sql`0`),
  outputTokens: bigint("output_tokens", { mode: "bigint" })
    .notNull()
    .default(sql`0`),
  costUsd: numeric("cost_usd").default("0"),
});

export const supportCases = pgTable(
  "support_cases",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    // The user who opened it from the dashboard; null for a chat-platform case (its owner is never assigned by
    // the chat platform's caller).
    ownerUserId: uuid("owner_user_id").references(() => users.id, { onDelete: "cascade" }),
    // The chat platform's channel of a chat-platform case; null for dashboard cases.
    sourceRef: text("source_ref"),
    // The request the user cited (its X-Request-Id); null for a chat-platform case that cited none.
    requestId: text("request_id"),
    locale: text("locale").notNull(),
    status: text("status", { enum: ["open", "resolved"] })
      .notNull()
      .default("open"),
    // Set by a staff takeover, cleared only by an explicit resume: no worker answer publishes meanwhile.
    staffHold: boolean("staff_hold").notNull().default(false),
    // The user asked for staff (handoff): their messages then queue private staff drafts, not answers.
    handoff: boolean("handoff").notNull().default(false),
    // Bumped by every event that invalidates answers in flight (a new user message, takeover, resolve, reopen);
    // a completion for another revision is discarded.
    revision: integer("revision").notNull().default(1),
    // The cited request's facts, snapshotted from its request-log row when the case was opened
    // (src/support/request-facts.ts): never payloads, provider mappings, credentials, IPs or upstream bodies.
    facts: jsonb("facts"),
    // The structured card the last published answer wrote: problem, facts, hypotheses, checks, missing,
    // next_step, confidence.
    card: jsonb("card"),
    ...usageColumns(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
    resolvedAt: timestamp("resolved_at", { withTimezone: true }),
  },
  (t) => [
    // One open case per own request, race-free across processes: the second insert conflicts and reuses it.
    uniqueIndex("support_cases_open_request_key")
      .on(t.ownerUserId, t.requestId)
      .where(sql`${t.status} = 'open' and ${t.ownerUserId} is not null and ${t.requestId} is not null`),
    uniqueIndex("support_cases_source_ref_key")
      .on(t.sourceRef)
      .where(sql`${t.sourceRef} is not null`),
    // The user's list, newest first, keyset-paginated; and the staff's.
    index("support_cases_owner_created_idx").on(t.ownerUserId, t.createdAt.desc(), t.id.desc()),
    index("support_cases_updated_idx").on(t.updatedAt.desc(), t.id.desc()),
    check("support_cases_owner_or_source", sql`${t.ownerUserId} is not null or ${t.sourceRef} is not null`),
  ],
);

export const supportMessages = pgTable(
  "support_messages",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    caseId: uuid("case_id")
      .notNull()
      .references(() => supportCases.id, { onDelete: "cascade" }),
    role: text("role", { enum: ["user", "assistant", "staff"] }).notNull(),
    content: text("content").notNull(),
    // The job whose answer this is (assistant messages).
    jobId: uuid("job_id"),
    // The chat platform's own message id: a snapshot's message already taken is not taken twice.
    sourceMessageId: text("source_message_id"),
    // Who wrote a staff message (an admin's user id, or `cli`).
    author: text("author"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("support_messages_case_idx").on(t.caseId, t.id),
    uniqueIndex("support_messages_source_key")
      .on(t.caseId, t.sourceMessageId)
      .where(sql`${t.sourceMessageId} is not null`),
  ],
);

// Private drafts: never transcript messages, never in a user response. `staff` drafts are a worker's reply
// proposal for a user message during handoff; `operator` and `bug` drafts are for staff (nothing is published
// externally).
export const supportDrafts = pgTable(
  "support_drafts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    caseId: uuid("case_id")
      .notNull()
      .references(() => supportCases.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["staff", "operator", "bug"] }).notNull(),
    content: text("content").notNull(),
    // The job that generated it, or null for a draft staff saved themselves (`reviewed`).
    jobId: uuid("job_id"),
    reviewed: boolean("reviewed").notNull().default(false),
    author: text("author"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("support_drafts_case_idx").on(t.caseId, t.createdAt)],
);

// Evidence a completed job submitted; a fact's `evidence_ids` name these `ref`s.
export const supportEvidence = pgTable(
  "support_evidence",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    caseId: uuid("case_id")
      .notNull()
      .references(() => supportCases.id, { onDelete: "cascade" }),
    jobId: uuid("job_id").notNull(),
    // The worker's id of the evidence within its completion.
    ref: text("ref").notNull(),
    kind: text("kind").notNull(),
    // What the evidence says (a bounded JSON value the worker sent).
    content: jsonb("content").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("support_evidence_case_idx").on(t.caseId, t.createdAt), uniqueIndex("support_evidence_job_ref_key").on(t.jobId, t.ref)],
);

export const SUPPORT_JOB_STATUSES = ["queued", "leased", "completed", "failed", "discarded"] as const;

export const supportJobs = pgTable(
  "support_jobs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    caseId: uuid("case_id")
      .notNull()
      .references(() => supportCases.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: SUPPORT_JOB_KINDS }).notNull(),
    // The case revision the job was made for: its answer publishes only if the case is still at it.
    revision: integer("revision").notNull(),
    status: text("status", { enum: SUPPORT_JOB_STATUSES }).notNull().default("queued"),
    // Claims so far (at most three); a queued job is claimable from `available_at` (retry backoff).
    attempts: integer("attempts").notNull().default(0),
    availableAt: timestamp("available_at", { withTimezone: true }).notNull().defaultNow(),
    // The current lease: only the token's sha-256 is stored.
    leaseTokenHash: text("lease_token_hash"),
    leaseExpiresAt: timestamp("lease_expires_at", { withTimezone: true }),
    workerId: text("worker_id"),
    // The outcome of the first completion (returned again to a repeated one) and of a failure.
    outcome: jsonb("outcome"),
    errorCode: text("error_code"),
    ...usageColumns(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
  },
  (t) => [
    // The claim's scan: queued jobs whose backoff is over, oldest first.
    index("support_jobs_queued_idx")
      .on(t.availableAt, t.createdAt)
      .where(sql`${t.status} = 'queued'`),
    // The sweep's scan: leases past their expiry.
    index("support_jobs_leased_idx")
      .on(t.leaseExpiresAt)
      .where(sql`${t.status} = 'leased'`),
    index("support_jobs_case_idx").on(t.caseId, t.createdAt),
    check("support_jobs_attempts_range", sql`${t.attempts} between 0 and 3`),
  ],
);
