import { z } from "zod";
import { configId, MiB, modelSchema, providerSchema, rateCardSchema, upstreamAnswerLimitsSchema } from "./catalog-schema.js";
import { checkAcrossSections } from "./cross-checks.js";
import { mediaSchema } from "./media-schema.js";
import { planSchema, pricingGroupName, pricingGroupSchema } from "./plans-schema.js";

// The config file's shape (docs/architecture.md, "Rules"), assembled from its sections: the catalog
// (catalog-schema.ts), plans and pricing groups (plans-schema.ts), media (media-schema.ts), and here the rest;
// the checks across sections are in cross-checks.ts. Every key is documented in docs/configuration.md.

/**
 * Days of history the retention keeps (docs/billing.md, "Retention"): 0 keeps it for ever (a value that reads as
 * "delete at once" could never be meant, and 0 also fits `${ENV:-0}`), else at least a day; at most a century,
 * which keeps the cutoff a valid timestamp.
 */
const retentionDays = (fallback: number) => z.int().min(0).max(36_500).default(fallback);

/**
 * GET /metrics (Prometheus text format; docs/api.md, "Metrics"): off unless enabled. Served on the main address
 * behind a bearer token, or on an address of its own (an internal interface) where the network is the protection.
 */
const metricsSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    /** The bearer token every scrape sends (`${METRICS_TOKEN}`); required on the main address. */
    token: z.string().min(16, "must be at least 16 characters").optional(),
    /** Serve /metrics here (and not on the main address). */
    listen: z.strictObject({ host: z.string().min(1).default("127.0.0.1"), port: z.int().min(0).max(65535) }).optional(),
  })
  .prefault({});

export const configSchema = z
  .strictObject({
    server: z
      .strictObject({
        host: z.string().min(1).default("127.0.0.1"),
        port: z.int().min(0).max(65535).default(8080),
        max_body_bytes: z
          .int()
          .positive()
          .default(16 * 1024 * 1024),
        drain_timeout_ms: z.int().nonnegative().default(10_000),
        trust_proxy: z.boolean().default(false),
        /** The cap of the small JSON routes (login, keys, credits, tokens, worker calls): their bodies hold a few fields. */
        small_body_bytes: z
          .int()
          .positive()
          .default(16 * 1024),
        /** Bytes of request bodies this process holds at once, over every route but the evaluation ones (their own budget). */
        body_budget_bytes: z
          .int()
          .positive()
          .default(256 * MiB),
        /** A body must have arrived this long after its reading began, else 408 and the connection closes. */
        body_timeout_ms: z.int().positive().default(30_000),
        /** After the grace, a body arriving slower than this on average is cut (408). */
        body_min_bytes_per_second: z.int().nonnegative().default(1024),
        body_min_rate_grace_ms: z.int().nonnegative().default(5_000),
        /** Deeper JSON is refused (400) before it is parsed. */
        max_json_depth: z.int().min(2).max(1000).default(128),
        /** Open client connections; past it the oldest one without a request in flight is closed, else the new one. */
        max_connections: z.int().positive().default(4096),
        /** A request's head must have arrived this long after its first byte. */
        headers_timeout_ms: z.int().positive().default(15_000),
        /** How often Node checks the header and request timeouts (they are cut at most this late). */
        connections_check_interval_ms: z.int().positive().max(30_000).default(5_000),
      })
      .prefault({})
      .refine((s) => s.max_body_bytes <= s.body_budget_bytes, {
        message: "max_body_bytes must not exceed body_budget_bytes (a body that can never fit would always get 503)",
        path: ["max_body_bytes"],
      }),
    database: z
      .strictObject({
        url: z.string().optional(),
        pool_size: z.int().positive().default(10),
        embedded_port: z.int().min(0).max(65535).default(0),
        /** A request that needs the database waits at most this long, then gets 503 database_unavailable. */
        request_timeout_ms: z.int().positive().max(60_000).default(2000),
        /** Opening a connection (or waiting for a free one) gives up after this long. */
        connect_timeout_ms: z.int().positive().max(60_000).default(2000),
        /** A statement whose answer takes longer is abandoned on this side (a stalled network), and retried where it may be. */
        query_timeout_ms: z.int().positive().max(600_000).default(15_000),
        /** `serve` waits this long for an external database that does not answer at start (0: fail at once). */
        startup_timeout_seconds: z.int().nonnegative().max(3600).default(60),
      })
      .prefault({}),
    auth: z
      .strictObject({
        session_ttl_seconds: z
          .int()
          .positive()
          .default(12 * 3600),
        jwt_secret: z.string().min(32).optional(),
        /** A file holding the session signing secret (≥ 32 characters), so it is neither in the config nor the database. */
        jwt_secret_file: z.string().min(1).optional(),
        /** The secret before a rotation: sessions it signed are still accepted until they expire or this is removed. */
        jwt_previous_secret_file: z.string().min(1).optional(),
        key_cache_ttl_seconds: z.int().nonnegative().default(60),
        /** Unset: `Secure` unless server.host is loopback (resolved by sessionCookieSecure). */
        cookie_secure: z.boolean().optional(),
        /** Shortest password accepted for a new user (OWASP: 8 at the very least; 12 by default). */
        password_min_length: z.int().min(8).max(64).default(12),
        password_hash: z
          .strictObject({
            /** log2 of scrypt's N (r=8, p=1): 17 as OWASP advises (128 MiB per hash); below 17 for tests only. */
            log_n: z.int().min(10).max(20).default(17),
            /** Hash and verify computations at once per process (each holds 128 MiB at log_n 17); the rest queue. */
            concurrency: z.int().positive().max(64).default(2),
          })
          .prefault({}),
        // Login attempts per email address and window, counted across every process (docs/auth.md, "Login throttling").
        login_max_attempts: z.int().positive().default(10),
        login_window_seconds: z.int().positive().max(86_400).default(900),
      })
      .prefault({}),
    logging: z
      .strictObject({
        level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
        /** `auto`: pretty lines when stdout is a terminal, JSON otherwise; `serve --log-format` overrides it. */
        format: z.enum(["auto", "pretty", "json"]).default("auto"),
      })
      .prefault({}),
    worker: z.strictObject({ concurrency: z.int().positive().max(64).default(2) }).prefault({}),
    quota: z
      .strictObject({
        /** Completion tokens reserved when a request sets no max_tokens. */
        default_completion_reserve: z.int().positive().default(4096),
        /** A hold older than this is expired even if its process still looks alive. */
        max_hold_seconds: z
          .int()
          .positive()
          .default(6 * 3600),
        /** Share of the usual charge a request on the client's own upstream key pays (0: free, admission still applies). */
        byok_charge_ratio: z.number().nonnegative().default(0),
        /** How often a serving process renews its heartbeat. */
        heartbeat_seconds: z.int().positive().default(15),
        /** A process silent this long is presumed dead: any serving process expires its leases. */
        instance_timeout_seconds: z.int().positive().default(90),
        /** How often each serving process runs the expiry (dead processes' leases, durable holds past expiry). */
        expiry_sweep_seconds: z.int().positive().default(15),
        /** A lease unused this long gives its free units back. */
        lease_idle_ms: z.int().positive().default(2000),
        /**
         * How long a settlement waits for others ready after it to share its commit (0: those of the same turn of the
         * event loop, and whatever arrives while a commit is in flight). Every answer waits for its charge's commit,
         * so this adds to each answer's latency what it saves the database in statements.
         */
        commit_group_ms: z.int().nonnegative().max(50).default(0),
        /** At shutdown, how long unwritten settlements keep being retried before they are given up (and logged). */
        shutdown_grace_seconds: z.int().nonnegative().default(30),
      })
      .prefault({})
      .refine((q) => q.instance_timeout_seconds >= 3 * q.heartbeat_seconds, {
        message: "instance_timeout_seconds must be at least 3 × heartbeat_seconds (a live process must never look dead)",
        path: ["instance_timeout_seconds"],
      })
      // An idle lease gives its units back while its process still admits from it without asking (fresh): a lease
      // idle past the fencing margin would hold units the process can no longer use without a sync.
      .refine((q) => q.lease_idle_ms < (q.instance_timeout_seconds - q.heartbeat_seconds) * 1000, {
        message: "lease_idle_ms must be shorter than (instance_timeout_seconds - heartbeat_seconds) in ms",
        path: ["lease_idle_ms"],
      }),
    retention: z
      .strictObject({
        /** Days a resolved hold or an ended lease is kept before it is rolled up and deleted; 0 keeps them for ever. */
        ledger_days: retentionDays(35),
        /** Days a request-log row is kept before it is rolled up and deleted; 0 keeps them for ever. */
        request_log_days: retentionDays(90),
        /**
         * Days an idempotency key of a money call (a credit, a reset grant or use) is kept, so that its retry answers
         * the first answer; 0 keeps them for ever. At least a day: the IETF draft's 24 hours.
         */
        idempotency_days: retentionDays(7),
        /** Rows one statement of the retention deletes at most. */
        batch_rows: z.int().positive().max(100_000).default(5000),
      })
      .prefault({}),
    /**
     * Daily token transfers (docs/billing.md, "Token transfers"): the policy's defaults, until an admin saves one
     * (`PUT /api/v1/admin/token-transfers/policy`, `gateway transfers policy set`), and the preview's rate.
     */
    transfers: z
      .strictObject({
        enabled: z.boolean().default(true),
        min_amount: z.int().positive().max(Number.MAX_SAFE_INTEGER).default(1),
        send_daily_limit: z.int().nonnegative().max(Number.MAX_SAFE_INTEGER).default(100_000),
        receive_daily_limit: z.int().nonnegative().max(Number.MAX_SAFE_INTEGER).default(100_000),
        service_daily_limit: z.int().nonnegative().max(Number.MAX_SAFE_INTEGER).default(10_000_000),
        /**
         * Recipient lookups a user may make per minute, over every process: previews, and sends naming no one who
         * accepts transfers (docs/api.md, "Token transfers").
         */
        lookups_per_minute: z.int().positive().max(10_000).default(20),
      })
      .prefault({}),
    analytics: z
      .strictObject({
        batch_size: z.int().positive().max(5000).default(500),
        flush_interval_ms: z.int().positive().default(100),
        /** Rows held while the database is away (each about 0.9 KB of heap: 100,000 is about 90 MB, 100 s at 1,000 refused requests a second). */
        max_buffered: z.int().positive().default(100_000),
        /** Days after today whose request-log partitions exist ahead (docs/operations.md, "The request log's partitions"). */
        partitions_ahead_days: z.int().min(1).max(60).default(7),
        /**
         * A PostgreSQL of its own for the request log and its rollups (docs/operations.md, "The request log apart").
         * Unset: the main database, where the ledger's journal writes each row with its charge. Set: the journal
         * writes an outbox on the main database and a drainer moves it here.
         */
        database_url: z.string().min(1).optional(),
        /** Connections to the analytics database per process (with database_url). */
        pool_size: z.int().positive().max(100).default(4),
        /** Outbox records the drainer moves per transaction. */
        outbox_batch_size: z.int().positive().max(10_000).default(1000),
        /** How often the drainer looks at the outbox when the last batch was not full. */
        outbox_interval_ms: z.int().positive().max(60_000).default(200),
      })
      .prefault({}),
    systemone: z
      .strictObject({
        /** The evaluation routes' own body cap (spec: 64 MiB). */
        max_body_bytes: z
          .int()
          .positive()
          .default(64 * 1024 * 1024),
        /** Bytes of evaluation bodies this process holds at once (being read or in flight); a body that does not fit gets 503. */
        admission_budget_bytes: z
          .int()
          .positive()
          .default(256 * 1024 * 1024),
        /** Upstream prices by evaluator version (`1.13.0`) or upstream model name; before the built-in ones. */
        rate_cards: z.record(z.string().min(1), rateCardSchema).default({}),
      })
      .prefault({}),
    limits: z
      .strictObject({
        upstream_answer_bytes: upstreamAnswerLimitsSchema,
        /**
         * A stream is ended (normally, with the protocol's length reason) once its output passes its limit by more
         * than the larger of `overrun_ratio` × the limit and `overrun_tokens` (docs/billing.md).
         */
        stream_output: z
          .strictObject({
            overrun_ratio: z.number().nonnegative().max(10).default(0.1),
            overrun_tokens: z.int().nonnegative().default(64),
          })
          .prefault({}),
      })
      .prefault({}),
    metrics: metricsSchema,
    media: mediaSchema,
    pricing_groups: z.record(pricingGroupName, pricingGroupSchema).default({ default: { multiplier: 1 } }),
    providers: z.record(configId, providerSchema).default({}),
    models: z.record(configId, modelSchema).default({}),
    plans: z.record(configId, planSchema).default({ free: { daily_tokens: 200_000, weekly_resets: 1, context_limit: 128_000 } }),
    default_plan: configId.default("free"),
  })
  .superRefine(checkAcrossSections);

export type Config = z.infer<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
export type ProviderConfig = z.infer<typeof providerSchema>;
export type ModelConfig = z.infer<typeof modelSchema>;
export type PlanConfig = z.infer<typeof planSchema>;
export type UpstreamAnswerLimits = z.infer<typeof upstreamAnswerLimitsSchema>;
export type RetentionConfig = Config["retention"];
export type MediaDownloadConfig = Config["media"]["download"];
export type VideoJobsConfig = Config["media"]["video"];
