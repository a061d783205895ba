import { Hono } from "hono";
import { z } from "zod";
import type { Pool } from "../../db/pool.js";
import { readValidJson } from "../../server/body.js";
import type { BodyCaps } from "../../server/body-rules.js";
import type { AppEnv } from "../../server/context.js";
import { channelControl, upsertSnapshot } from "../chat-platform/chatplatform.js";
import { controlRequestSchema, snapshotRequestSchema } from "../chat-platform/chatplatform-wire.js";
import { claimJobs } from "../worker-jobs/claim.js";
import { completeJob, jobNotFound } from "../worker-jobs/complete.js";
import { failJob } from "../worker-jobs/fail.js";
import { claimRequestSchema, completeRequestSchema, failRequestSchema } from "../wire.js";

// The support workers' endpoints (docs/support.md; docs/api.md, "Support workers"), mounted at
// /api/v1/internal/support/assistant behind the bot token; complete and fail also need the job's lease token. The
// chat platform's control and snapshot routes share the mount and the token.

export interface SupportWorkerDeps {
  pool: Pool;
  bodies: BodyCaps;
}

const jobId = z.uuid();

/** The snapshot's message text, which upsertSnapshot scrubs of NUL, controls and lone surrogates before storing it. */
const SCRUBBED_SNAPSHOT_TEXT = /^messages\[\d+\]\.content$/;

export function supportWorkerRoutes(deps: SupportWorkerDeps) {
  const { pool, bodies } = deps;
  // A malformed id names no job: the same 404 as an unknown one.
  const idOf = (raw: string): string => {
    if (!jobId.safeParse(raw).success) throw jobNotFound();
    return raw;
  };
  return new Hono<AppEnv>()
    .post("/jobs/claim", async (c) => {
      const body = await readValidJson(c, claimRequestSchema, bodies.small);
      return c.json({ jobs: await claimJobs(pool, body) });
    })
    .post("/jobs/:id/complete", async (c) => {
      const id = idOf(c.req.param("id"));
      const body = await readValidJson(c, completeRequestSchema, bodies.large);
      return c.json(await completeJob(pool, id, body));
    })
    .post("/jobs/:id/fail", async (c) => {
      const id = idOf(c.req.param("id"));
      const body = await readValidJson(c, failRequestSchema, bodies.small);
      return c.json(await failJob(pool, id, body));
    })
    .post("/cases/chatplatform/control", async (c) => {
      const body = await readValidJson(c, controlRequestSchema, bodies.small);
      return c.json(await channelControl(pool, body.source_ref));
    })
    .post("/cases/chatplatform", async (c) => {
      // The spec's "scrubbed snapshot": message text is cleaned (src/support/chat-platform/scrub.ts), not refused.
      const body = await readValidJson(c, snapshotRequestSchema, bodies.large, SCRUBBED_SNAPSHOT_TEXT);
      return c.json(await upsertSnapshot(pool, body));
    });
}
