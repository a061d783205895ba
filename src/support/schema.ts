import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, jsonb, numeric, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { users } from "../auth/schema.js";
import { INCIDENT_STATUSES, SUPPORT_JOB_KINDS } from "@model-gateway/worker-kit/wire/support";

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

// Incidents (docs/support.md, "Incidents"): one per signature, a public model and a gateway error code, raised by
// the support_incidents task from two independent signals whose aggregates are kept apart and private: clusters
// of open cases (`affected`) and the request log's error rate (`technical`, which also records corroboration).
export const supportIncidents = pgTable(
  "support_incidents",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    publicModel: text("public_model").notNull(),
    errorCode: text("error_code").notNull(),
    title: text("title").notNull(),
    status: text("status", { enum: INCIDENT_STATUSES }).notNull().default("candidate"),
    // What users see in the detail of the linked cases, once published (published_at set).
    publicSummary: text("public_summary"),
    publishedAt: timestamp("published_at", { withTimezone: true }),
    // The affected-user aggregate the last case scan saw above its threshold; null until one did.
    affected: jsonb("affected"),
    // The technical aggregate the last request-log scan saw above its threshold; null until one did.
    technical: jsonb("technical"),
    // When the request log first corroborated the incident: publishing needs it (spec, rule 1).
    corroboratedAt: timestamp("corroborated_at", { withTimezone: true }),
    // Who last changed it: `admin:<user id>`, `cli`, or null while only the task wrote it.
    updatedBy: text("updated_by"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // One unresolved incident per signature: the task's upserts conflict here, so re-running never duplicates;
    // after a resolve, the same signature raises a new candidate.
    uniqueIndex("support_incidents_open_signature_key")
      .on(t.publicModel, t.errorCode)
      .where(sql`${t.status} <> 'resolved'`),
    index("support_incidents_updated_idx").on(t.updatedAt.desc(), t.id.desc()),
  ],
);

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
    // Who made the last staff change (takeover, resume, resolve, reply): `admin:<user id>` or `cli`; null until
    // staff act. The user's own actions are theirs and are not recorded here.
    staffActor: text("staff_actor"),
    // Bumped by every event that invalidates answers in flight (a new user message, takeover, resolve, reopen);
    // a completion for another revision is discarded.
    revision: integer("revision").notNull().default(1),
    // The cited request's facts, snapshotted from its request-log row when the case was opened
    // (src/support/cases/request-facts.ts): never payloads, provider mappings, credentials, IPs or upstream bodies.
    facts: jsonb("facts"),
    // The structured card the last published answer wrote: problem, facts, hypotheses, checks, missing,
    // next_step, confidence.
    card: jsonb("card"),
    // The incident whose signature (public model and error code) the facts match, linked by the support_incidents
    // task: its published summary shows in the case's detail, its aggregates never do.
    incidentId: uuid("incident_id").references(() => supportIncidents.id, { onDelete: "set null" }),
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
    index("support_cases_incident_idx")
      .on(t.incidentId)
      .where(sql`${t.incidentId} is not null`),
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
    // The claim's and the sweep's scan of leases past their expiry.
    index("support_jobs_leased_idx")
      .on(t.leaseExpiresAt)
      .where(sql`${t.status} = 'leased'`),
    index("support_jobs_case_idx").on(t.caseId, t.createdAt),
    check("support_jobs_attempts_range", sql`${t.attempts} between 0 and 3`),
  ],
);
