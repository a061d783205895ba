import { constants as bufferConstants } from "node:buffer";
import { z } from "zod";
import { DEFAULT_NATIVE_IMAGE_MODELS } from "../billing/image-quota.js";

// The config file's shape (docs/architecture.md, "Rules"). Every key is documented in docs/configuration.md.

const id = z.string().min(1).max(128);

export const providerProtocols = ["openai", "anthropic", "gemini", "systemone", "video"] as const;
const modelKinds = ["chat", "embedding", "image", "video", "systemone"] as const;

export const providerSchema = z.strictObject({
  protocol: z.enum(providerProtocols),
  base_url: z.url({ protocol: /^https?$/ }),
  api_key: z.string().default(""),
  /** openai: ask for usage in streams (stream_options.include_usage); off for servers that reject it. */
  stream_usage: z.boolean().default(true),
  /** Requests may bring their own key for this provider (X-Upstream-Api-Key); off unless the operator opts in. */
  allow_byok: z.boolean().default(false),
  /** Keep-alive connections to this provider per gateway process. */
  max_connections: z.int().positive().default(256),
  timeouts: z
    .strictObject({
      connect_ms: z.int().positive().default(5_000),
      first_byte_ms: z.int().positive().default(60_000),
      idle_ms: z.int().positive().default(60_000),
    })
    .prefault({}),
});

const MiB = 1024 * 1024;

/** The longest video a request may ask for on any model (docs/api.md, "Video"). */
export const MAX_VIDEO_SECONDS = 600;

/**
 * The most bytes of one upstream JSON answer (2xx) the gateway reads, per upstream capability: the answer is
 * held whole (text, then its parse) to be checked and reshaped, so without a cap a broken or hostile upstream
 * could make a process buffer gigabytes. Past it: 502 upstream_answer_too_large, no fallback. Streams are
 * relayed as they arrive and never held whole, so they have no cap. Why each default: docs/configuration.md.
 */
const answerBytes = (fallback: number) =>
  // One answer is decoded into one string; V8 refuses longer ones (ERR_STRING_TOO_LONG).
  z.int().positive().max(bufferConstants.MAX_STRING_LENGTH).default(fallback);

export const upstreamAnswerLimitsSchema = z
  .strictObject({
    chat_completions: answerBytes(32 * MiB),
    responses: answerBytes(32 * MiB),
    messages: answerBytes(32 * MiB),
    generate_content: answerBytes(32 * MiB),
    embeddings: answerBytes(256 * MiB),
    evaluate: answerBytes(128 * MiB),
    /** For the image capabilities, read once they exist. */
    images: answerBytes(256 * MiB),
    /** For the video capabilities (job JSON; video bytes are never read as JSON), read once they exist. */
    video: answerBytes(1 * MiB),
  })
  .prefault({});

const targetSchema = z.union([id, z.strictObject({ provider: id, model: z.string().min(1).optional() })]);

const modelSchema = z.strictObject({
  kind: z.enum(modelKinds),
  upstream: z.string().min(1),
  targets: z.array(targetSchema).min(1),
  token_multiplier: z.number().nonnegative().default(1),
  /** Price of a completion token relative to a prompt token. */
  completion_ratio: z.number().nonnegative().default(1),
  /** Price of a cached prompt token relative to an uncached one. */
  cached_ratio: z.number().nonnegative().default(1),
  owned_by: z.string().default("gateway"),
  description: z.string().default(""),
  release_date: z.iso.date().optional(),
  /** More public IDs of this model that only reseller keys may use; answers name the ID the client sent. */
  reseller_aliases: z.array(id).default([]),
  /** systemone: the whole input is priced `multiplier` times when it is over `threshold_tokens`. */
  long_context: z.strictObject({ threshold_tokens: z.int().nonnegative(), multiplier: z.number().nonnegative() }).optional(),
  /** systemone: what reseller keys pay, in USD per million input tokens (pay-as-you-go). */
  reseller_price: z.strictObject({ input_usd_per_million: z.number().nonnegative() }).optional(),
  /**
   * chat: the most output tokens one answer (one choice) may have; caps a stream that asks for no limit, and one
   * asking for more (docs/billing.md, "Streams that overrun"). Absent: the request's own limit, if any.
   */
  max_output_tokens: z.int().positive().optional(),
  /** systemone: token limits of the input, instead of the version's own (1.13: 64,000 and 32,000). */
  token_limits: z.strictObject({ total: z.int().positive(), state_plus_question: z.int().positive() }).optional(),
  /** video (required there): quota per second of video produced, and the durations a request may ask for (docs/billing.md). */
  video_price: z
    .strictObject({
      units_per_second: z.number().nonnegative(),
      /** Held and charged per video when a request names no `duration`. */
      default_seconds: z.number().positive().max(MAX_VIDEO_SECONDS).default(5),
      /** The longest `duration` a request may ask for (400 above it). */
      max_seconds: z.number().positive().max(MAX_VIDEO_SECONDS).default(60),
    })
    .refine((p) => p.default_seconds <= p.max_seconds, {
      message: "default_seconds must not exceed max_seconds",
      path: ["default_seconds"],
    })
    .optional(),
});

/** The upstream's price of one evaluator version or upstream model name, USD per million tokens. */
const rateCardSchema = z.strictObject({
  input_usd_per_million: z.number().nonnegative(),
  output_usd_per_million: z.number().nonnegative().default(0),
});

/** Keys only evaluation models take. */
const SYSTEMONE_KEYS = ["long_context", "reseller_price", "token_limits"] as const;

/**
 * Days of history the retention keeps (docs/billing.md, "Retention"): 0 keeps it for ever (a value that reads as
 * "delete at once" could never be meant, and 0 also fits `${ENV:-0}`), else at least a day; at most a century,
 * which keeps the cutoff a valid timestamp.
 */
const retentionDays = (fallback: number) => z.int().min(0).max(36_500).default(fallback);

const planSchema = z.strictObject({
  daily_tokens: z.int().nonnegative(),
  weekly_resets: z.int().nonnegative().default(0),
  context_limit: z.int().positive(),
  /** Public model IDs this plan may use; absent = every model. */
  models: z.array(id).optional(),
  /**
   * Fixed-quota request packs (docs/billing.md, "Request packs"): public model ID -> requests per UTC day. A
   * subscription request to such a model counts one request on the pack, not tokens on the daily allowance.
   */
  request_packs: z.record(id, z.int().positive().max(1_000_000_000)).optional(),
});

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

/** A hostname whose last label is not a number: `999.1.1.1` is a mistyped address, never a name (WHATWG URL refuses it). */
const isHostname = (v: string) => z.hostname().safeParse(v).success && !/(^|\.)\d+\.?$/.test(v);

/** An allow_private entry: a CIDR, one address (IPv4 or IPv6), or a hostname matched exactly. */
const privateUpstream = z
  .string()
  .refine((v) => [z.cidrv4(), z.cidrv6(), z.ipv4(), z.ipv6()].some((format) => format.safeParse(v).success) || isHostname(v), {
    message: "must be a CIDR (10.0.0.0/8, fc00::/7), an IP address or a hostname",
  });

/**
 * Fetching upstream media by URL (an image provider's answer): the URL is the upstream's, so every fetch is
 * checked against non-public addresses after DNS resolution (src/providers/address-policy.ts) unless allowed here.
 */
const mediaSchema = z
  .strictObject({
    images: z
      .strictObject({
        /** Upstream model IDs priced by their native token usage, with their `-YYYY-MM-DD` snapshots (docs/billing.md). */
        native_usage_models: z.array(z.string().min(1)).default([...DEFAULT_NATIVE_IMAGE_MODELS]),
      })
      .prefault({}),
    /** Video jobs (docs/api.md, "Video"): how every serving process polls their upstreams, and how long a job may run. */
    video: z
      .strictObject({
        poll_interval_seconds: z.int().positive().max(3600).default(5),
        /**
         * How long a process's claim on a job lasts while it polls it: no other process polls the job meanwhile, and
         * the job of a process that died during a poll is taken by another once it lapses.
         */
        claim_seconds: z.int().min(2).max(600).default(30),
        /** A job still running after this long is failed and its hold voided. */
        job_timeout_seconds: z
          .int()
          .positive()
          .default(6 * 3600),
        /** The durable hold's expiry: a job that no process polled again (none running) gives its units back then. */
        hold_expiry_seconds: z
          .int()
          .positive()
          .default(24 * 3600),
      })
      .prefault({})
      .refine((v) => v.hold_expiry_seconds > v.job_timeout_seconds, {
        message: "hold_expiry_seconds must be longer than job_timeout_seconds (a running job must keep its hold)",
        path: ["hold_expiry_seconds"],
      }),
    download: z
      .strictObject({
        max_bytes: z
          .int()
          .positive()
          .max(bufferConstants.MAX_LENGTH)
          .default(32 * MiB),
        /** The whole download, redirects included. */
        timeout_ms: z.int().positive().default(30_000),
        max_redirects: z.int().min(0).max(10).default(3),
        /** Non-public upstreams fetched anyway (a mock upstream on 127.0.0.1, a CDN on an internal network). */
        allow_private: z.array(privateUpstream).default([]),
      })
      .prefault({}),
    /** GET /embed/image:{model} (docs/api.md, "Embeddable images"): its tokens and its cache shared by every process. */
    embed: z
      .strictObject({
        /** The cache's total image bytes; the least recently used entries are evicted past it. */
        cache_max_bytes: z
          .int()
          .nonnegative()
          .default(256 * MiB),
        /** How long an entry serves after it was generated. */
        cache_ttl_seconds: z.int().positive().default(86_400),
        /** How long a request waits for an identical one that is generating (after that it generates itself). */
        wait_seconds: z.int().positive().max(600).default(120),
        /** Embed tokens: the lifetime when POST /v1/embed/tokens names none, and the longest it may ask for. */
        token_ttl_seconds: z.int().positive().default(3_600),
        token_max_ttl_seconds: z.int().positive().max(86_400).default(86_400),
      })
      .prefault({})
      .refine((embed) => embed.token_ttl_seconds <= embed.token_max_ttl_seconds, {
        message: "token_ttl_seconds must not exceed token_max_ttl_seconds",
        path: ["token_ttl_seconds"],
      }),
  })
  .prefault({});

/**
 * A pricing group's name, in the config and in an admin's key alike: a plain name that no object has as a member
 * (`constructor`, `toString`, `__proto__`), so that a name is always data, whatever table holds it.
 */
export const PRICING_GROUP_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
export const isPricingGroupName = (name: string): boolean => PRICING_GROUP_NAME.test(name) && !(name in Object.prototype);
const PRICING_GROUP_RULE = "must be 1 to 64 of a-z, 0-9, '_', '.', '-', starting with a letter or digit, and not a name every object has";
export const pricingGroupName = z.string().refine(isPricingGroupName, { error: PRICING_GROUP_RULE });

const pricingGroupSchema = z.strictObject({
  /** Applies to every quota charge of keys in the group (the key's global multiplier). */
  multiplier: z.number().nonnegative().default(1),
});

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
    providers: z.record(id, providerSchema).default({}),
    models: z.record(id, modelSchema).default({}),
    plans: z.record(id, planSchema).default({ free: { daily_tokens: 200_000, weekly_resets: 1, context_limit: 128_000 } }),
    default_plan: id.default("free"),
  })
  .superRefine((cfg, ctx) => {
    for (const [modelId, model] of Object.entries(cfg.models)) {
      model.targets.forEach((target, i) => {
        const provider = typeof target === "string" ? target : target.provider;
        if (!cfg.providers[provider]) {
          ctx.addIssue({
            code: "custom",
            path: ["models", modelId, "targets", i],
            message: `unknown provider "${provider}"`,
          });
        }
      });
    }
    const publicIds = new Map(Object.keys(cfg.models).map((modelId) => [modelId, modelId]));
    for (const [modelId, model] of Object.entries(cfg.models)) {
      for (const key of SYSTEMONE_KEYS) {
        if (model[key] !== undefined && model.kind !== "systemone") {
          ctx.addIssue({ code: "custom", path: ["models", modelId, key], message: `only systemone models take ${key}` });
        }
      }
      if (model.max_output_tokens !== undefined && model.kind !== "chat") {
        ctx.addIssue({
          code: "custom",
          path: ["models", modelId, "max_output_tokens"],
          message: "only chat models take max_output_tokens",
        });
      }
      if ((model.video_price !== undefined) !== (model.kind === "video")) {
        const message = model.kind === "video" ? "video models need video_price" : "only video models take video_price";
        ctx.addIssue({ code: "custom", path: ["models", modelId, "video_price"], message });
      }
      model.reseller_aliases.forEach((alias, i) => {
        const taken = publicIds.get(alias);
        if (taken !== undefined) {
          ctx.addIssue({
            code: "custom",
            path: ["models", modelId, "reseller_aliases", i],
            message: `"${alias}" is already the ID or an alias of model "${taken}"`,
          });
        }
        publicIds.set(alias, modelId);
      });
    }
    for (const [planId, plan] of Object.entries(cfg.plans)) {
      for (const model of Object.keys(plan.request_packs ?? {})) {
        if (!Object.hasOwn(cfg.models, model)) {
          ctx.addIssue({ code: "custom", path: ["plans", planId, "request_packs", model], message: `unknown model "${model}"` });
        } else if (cfg.models[model]!.kind === "video") {
          // A video job is held and settled later (a durable hold on the day's allowance), never per request.
          ctx.addIssue({
            code: "custom",
            path: ["plans", planId, "request_packs", model],
            message: "video models cannot be request packs",
          });
        }
      }
      plan.models?.forEach((model, i) => {
        if (!cfg.models[model]) {
          ctx.addIssue({ code: "custom", path: ["plans", planId, "models", i], message: `unknown model "${model}"` });
        }
      });
    }
    // Late outcomes must still find their rows: a request's hold resolves within quota.max_hold_seconds (a later
    // settlement still posts, through its lease), so the ledger keeps more than that.
    const { ledger_days } = cfg.retention;
    if (ledger_days > 0 && ledger_days * 86_400 <= cfg.quota.max_hold_seconds) {
      ctx.addIssue({
        code: "custom",
        path: ["retention", "ledger_days"],
        message: `must be 0 (keep for ever) or longer than quota.max_hold_seconds (${cfg.quota.max_hold_seconds} s)`,
      });
    }
    const { metrics } = cfg;
    // Anyone who reaches the gateway's address could read its traffic and ledger numbers: an address of its own
    // (firewalled like the database) or a token; never neither.
    if (metrics.enabled && !metrics.listen && metrics.token === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["metrics", "token"],
        message: "required when metrics are served on the main address: set a token (e.g. ${METRICS_TOKEN}) or metrics.listen",
      });
    }
    if (metrics.listen && metrics.listen.port !== 0 && metrics.listen.port === cfg.server.port) {
      ctx.addIssue({ code: "custom", path: ["metrics", "listen", "port"], message: "must differ from server.port" });
    }
    if (!cfg.pricing_groups.default) {
      ctx.addIssue({ code: "custom", path: ["pricing_groups"], message: 'a "default" pricing group is required' });
    }
    if (!cfg.plans[cfg.default_plan]) {
      ctx.addIssue({ code: "custom", path: ["default_plan"], message: `unknown plan "${cfg.default_plan}"` });
    }
  });

export type Config = z.infer<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
export type ProviderConfig = z.infer<typeof providerSchema>;
export type ModelConfig = z.infer<typeof modelSchema>;
export type PlanConfig = z.infer<typeof planSchema>;
export type UpstreamAnswerLimits = z.infer<typeof upstreamAnswerLimitsSchema>;
export type RetentionConfig = Config["retention"];
export type MediaDownloadConfig = Config["media"]["download"];
export type VideoJobsConfig = Config["media"]["video"];
