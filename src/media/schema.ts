import { sql } from "drizzle-orm";
import { bigint, check, customType, index, integer, jsonb, numeric, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { users } from "../auth/schema.js";

// Video generation jobs (docs/api.md, "Video"): one row per accepted submission (src/media/video-jobs.ts), polled
// by whichever serving process claims it when it is due (src/media/video-poller.ts), and ended once (completed or
// failed) in the transaction that resolves its durable hold and writes the submission's request-log row. The
// upstream's job id and video URLs stay here: no client ever sees them.
export const videoJobs = pgTable(
  "video_jobs",
  {
    // The gateway's job id, the one clients see.
    id: uuid("id").primaryKey(),
    // No foreign keys, as for request_logs: a job outlives a deleted key and is still settled.
    userId: uuid("user_id").notNull(),
    keyId: uuid("key_id"),
    // The submission's X-Request-Id: the request-log row the job writes when it ends.
    requestId: text("request_id").notNull().unique(),
    publicModel: text("public_model").notNull(),
    provider: text("provider").notNull(),
    upstreamModel: text("upstream_model").notNull(),
    upstreamJobId: text("upstream_job_id").notNull(),
    // Providers tried before the one that accepted the job.
    fallbackPath: text("fallback_path").array().notNull(),
    status: text("status", { enum: ["queued", "in_progress", "completed", "failed"] }).notNull(),
    // The durable hold (quota_holds.id) and what it held.
    holdId: uuid("hold_id").notNull(),
    held: bigint("held", { mode: "bigint" }).notNull(),
    // Seconds per video the request asked for (or the model's default), and how many videos.
    seconds: numeric("seconds").notNull(),
    n: integer("n").notNull(),
    // The exact quota per second of video at submission (src/billing/video-quota.ts): a config change never
    // reprices a job already running.
    rateNum: numeric("rate_num").notNull(),
    rateDen: numeric("rate_den").notNull(),
    // Set when the job ends: what the ledger posted, the videos ([{url, duration}], or [{content: "provider",
    // duration}] for a provider that serves them by the job's id), the gateway's error code.
    charged: bigint("charged", { mode: "bigint" }),
    videos: jsonb("videos"),
    errorCode: text("error_code"),
    // When the submission arrived, when the upstream accepted it, the last status change, when it ended, and
    // when the poll gives up on a job still running (media.video.job_timeout_seconds).
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull(),
    endedAt: timestamp("ended_at", { withTimezone: true }),
    deadline: timestamp("deadline", { withTimezone: true }).notNull(),
    // When a process polls the running job next, by the database's clock. A claim moves it to the claim's end
    // (media.video.claim_seconds), so no other process takes the job while it is polled and a claim whose process
    // died lapses by itself; the poll then moves it to the next poll.
    nextPollAt: timestamp("next_poll_at", { withTimezone: true }).notNull().defaultNow(),
    // The current claim's token: only the poll that holds it schedules the next one.
    pollClaim: uuid("poll_claim"),
  },
  (t) => [
    index("video_jobs_user_created_idx").on(t.userId, t.createdAt),
    index("video_jobs_due_idx")
      .on(t.nextPollAt)
      .where(sql`${t.status} in ('queued', 'in_progress')`),
    check("video_jobs_amounts_nonnegative", sql`${t.held} >= 0 and (${t.charged} is null or ${t.charged} >= 0)`),
  ],
);

const bytea = customType<{ data: Buffer }>({ dataType: () => "bytea" });

// The embed route's image cache (docs/api.md, "Embeddable images"), shared by every gateway process. One row per
// user and normalised request; a row without `bytes` is a claim: one process is generating that image and the
// others wait for it until `expires_at` (then any of them may claim it again). Total `size_bytes` stays under
// media.embed.cache_max_bytes: each insert evicts expired rows, then the least recently used (media-cache.ts).
export const mediaCache = pgTable(
  "media_cache",
  {
    // sha-256 (hex) of the user, the model and the normalised parameters: never the prompt itself.
    keyHash: text("key_hash").primaryKey(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    model: text("model").notNull(),
    contentType: text("content_type"),
    etag: text("etag"),
    bytes: bytea("bytes"),
    sizeBytes: integer("size_bytes").notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("media_cache_last_used_idx").on(t.lastUsedAt), check("media_cache_size_nonnegative", sql`${t.sizeBytes} >= 0`)],
);
