import { z } from "zod";
import type { Pool } from "../../db/pool.js";
import { ours } from "../../openapi/operation.js";
import { readValidJson } from "../../server/body.js";
import type { BodyCaps } from "../../server/body-rules.js";
import { route } from "../../server/route.js";
import { channelControl, upsertSnapshot } from "../chat-platform/chatplatform.js";
import {
  controlRequestSchema,
  controlResponseSchema,
  snapshotRequestSchema,
  snapshotResponseSchema,
} from "@model-gateway/worker-kit/wire/chat-platform";
import {
  claimRequestSchema,
  claimResponseSchema,
  completeRequestSchema,
  completeResponseSchema,
  failRequestSchema,
  failResponseSchema,
} from "@model-gateway/worker-kit/wire/support";
import { claimJobs } from "../worker-jobs/claim.js";
import { completeJob, jobNotFound } from "../worker-jobs/complete.js";
import { failJob } from "../worker-jobs/fail.js";

// The support workers' endpoints (docs/support.md; docs/api.md, "Support workers"), under
// /api/v1/internal/support/assistant behind the bot token; complete and fail also need the job's lease token. The
// chat platform's control and snapshot routes share the mount and the token.

export interface SupportWorkerDeps {
  pool: Pool;
  bodies: BodyCaps;
}

const jobIdSchema = z.uuid();

/** The snapshot's message text, which upsertSnapshot scrubs of NUL, controls and lone surrogates before storing it. */
const SCRUBBED_SNAPSHOT_TEXT = /^messages\[\d+\]\.content$/;

const base = "/api/v1/internal/support/assistant";
const id = { id: "The job's ID (from the claim)." };

/** A malformed id names no job: the same 404 as an unknown one. */
function idOf(raw: string | undefined): string {
  if (raw === undefined || !jobIdSchema.safeParse(raw).success) throw jobNotFound();
  return raw;
}

const claim = route<SupportWorkerDeps>(
  {
    method: "post",
    path: `${base}/jobs/claim`,
    operationId: "claimSupportJobs",
    summary: "Leases up to `limit` queued support jobs, each with a fresh lease token and its case's context",
    description: "Each claim counts an attempt (at most three per job). An empty `jobs` means nothing is claimable now.",
    tag: "Internal",
    access: "bot",
    body: ours("SupportClaimRequest", claimRequestSchema),
    ok: { status: 200, description: "The leased jobs.", schema: ours("SupportClaimResponse", claimResponseSchema) },
    errors: ["invalid_value"],
  },
  ({ pool, bodies }) =>
    async (c) => {
      const body = await readValidJson(c, claimRequestSchema, bodies.small);
      return c.json({ jobs: await claimJobs(pool, body) });
    },
);

const complete = route<SupportWorkerDeps>(
  {
    method: "post",
    path: `${base}/jobs/{id}/complete`,
    operationId: "completeSupportJob",
    summary: "Commits a leased job's answer or draft; it is published only at the case's revision and without a staff hold",
    description: "A repeat with the same lease token answers the first result and changes nothing.",
    tag: "Internal",
    access: "bot",
    pathParams: id,
    body: ours("SupportCompleteRequest", completeRequestSchema),
    ok: { status: 200, description: "What became of the completion.", schema: ours("SupportCompleteResponse", completeResponseSchema) },
    errors: ["invalid_value", "job_not_found", "lease_lost", "lease_expired"],
  },
  ({ pool, bodies }) =>
    async (c) => {
      const jobId = idOf(c.req.param("id"));
      const body = await readValidJson(c, completeRequestSchema, bodies.large);
      return c.json(await completeJob(pool, jobId, body));
    },
);

const fail = route<SupportWorkerDeps>(
  {
    method: "post",
    path: `${base}/jobs/{id}/fail`,
    operationId: "failSupportJob",
    summary: "Gives up a leased job: queued again with backoff if retryable and attempts remain, else failed",
    tag: "Internal",
    access: "bot",
    pathParams: id,
    body: ours("SupportFailRequest", failRequestSchema),
    ok: { status: 200, description: "The job's state after the failure.", schema: ours("SupportFailResponse", failResponseSchema) },
    errors: ["invalid_value", "job_not_found", "lease_lost", "lease_expired"],
  },
  ({ pool, bodies }) =>
    async (c) => {
      const jobId = idOf(c.req.param("id"));
      const body = await readValidJson(c, failRequestSchema, bodies.small);
      return c.json(await failJob(pool, jobId, body));
    },
);

const control = route<SupportWorkerDeps>(
  {
    method: "post",
    path: `${base}/cases/chatplatform/control`,
    operationId: "chatPlatformControl",
    summary: "Tells the chat platform, just before it delivers an answer, whether staff hold the channel's case",
    description: "An unknown channel answers `{staff_hold: false}` and nothing is created.",
    tag: "Internal",
    access: "bot",
    body: ours("ChatPlatformControlRequest", controlRequestSchema),
    ok: { status: 200, description: "The channel's hold.", schema: ours("ChatPlatformControlResponse", controlResponseSchema) },
    errors: ["invalid_value"],
  },
  ({ pool, bodies }) =>
    async (c) => {
      const body = await readValidJson(c, controlRequestSchema, bodies.small);
      return c.json(await channelControl(pool, body.source_ref));
    },
);

const snapshot = route<SupportWorkerDeps>(
  {
    method: "post",
    path: `${base}/cases/chatplatform`,
    operationId: "chatPlatformSnapshot",
    summary: "Upserts a chat channel's case from a snapshot: new messages by source message id, the card, a staff takeover",
    description:
      "Messages are stored scrubbed; known source message ids are skipped. `staff_active: false` or absent never clears a hold. " +
      "New user messages bump the revision and queue one job. The case never gets an owner: owner fields are refused.",
    tag: "Internal",
    access: "bot",
    body: ours("ChatPlatformSnapshotRequest", snapshotRequestSchema),
    ok: {
      status: 200,
      description: "The channel's case after the snapshot.",
      schema: ours("ChatPlatformSnapshotResponse", snapshotResponseSchema),
    },
    errors: ["invalid_value"],
  },
  ({ pool, bodies }) =>
    async (c) => {
      // The spec's "scrubbed snapshot": message text is cleaned (src/support/chat-platform/scrub.ts), not refused.
      const body = await readValidJson(c, snapshotRequestSchema, bodies.large, SCRUBBED_SNAPSHOT_TEXT);
      return c.json(await upsertSnapshot(pool, body));
    },
);

export const supportWorkerRoutes = [claim, complete, fail, control, snapshot];
