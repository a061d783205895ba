import { z } from "zod";

// The config file's shape (DESIGN.md §4). Every key is documented in docs/configuration.md.

const id = z.string().min(1).max(128);

export const providerProtocols = ["openai", "anthropic", "gemini", "systemone", "video"] as const;
export const modelKinds = ["chat", "embedding", "image", "video", "systemone"] as const;

export const providerSchema = z.strictObject({
  protocol: z.enum(providerProtocols),
  base_url: z.url({ protocol: /^https?$/ }),
  api_key: z.string().default(""),
  /** openai: ask for usage in streams (stream_options.include_usage); off for servers that reject it. */
  stream_usage: z.boolean().default(true),
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

const targetSchema = z.union([id, z.strictObject({ provider: id, model: z.string().min(1).optional() })]);

export const modelSchema = z.strictObject({
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
});

export const planSchema = z.strictObject({
  daily_tokens: z.int().nonnegative(),
  weekly_resets: z.int().nonnegative().default(0),
  context_limit: z.int().positive(),
  /** Public model IDs this plan may use; absent = every model. */
  models: z.array(id).optional(),
});

export const pricingGroupSchema = z.strictObject({
  /** Applies to every quota charge of keys in the group (the key's global multiplier). */
  multiplier: z.number().nonnegative().default(1),
});

export const configSchema = z
  .strictObject({
    server: z
      .strictObject({
        host: z.string().min(1).default("127.0.0.1"),
        port: z.int().min(0).max(65535).default(8080),
        max_body_bytes: z.int().positive().default(16 * 1024 * 1024),
        drain_timeout_ms: z.int().nonnegative().default(10_000),
        trust_proxy: z.boolean().default(false),
      })
      .prefault({}),
    database: z
      .strictObject({
        url: z.string().optional(),
        pool_size: z.int().positive().default(10),
        embedded_port: z.int().min(0).max(65535).default(0),
      })
      .prefault({}),
    auth: z
      .strictObject({
        session_ttl_seconds: z.int().positive().default(12 * 3600),
        jwt_secret: z.string().min(32).optional(),
        key_cache_ttl_seconds: z.int().nonnegative().default(60),
        cookie_secure: z.boolean().default(false),
      })
      .prefault({}),
    logging: z
      .strictObject({ level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info") })
      .prefault({}),
    worker: z.strictObject({ concurrency: z.int().positive().max(64).default(2) }).prefault({}),
    quota: z
      .strictObject({
        /** Completion tokens reserved when a request sets no max_tokens. */
        default_completion_reserve: z.int().positive().default(4096),
        /** A hold older than this is expired even if its process still looks alive. */
        max_hold_seconds: z.int().positive().default(6 * 3600),
      })
      .prefault({}),
    analytics: z
      .strictObject({
        batch_size: z.int().positive().max(5000).default(500),
        flush_interval_ms: z.int().positive().default(100),
        max_buffered: z.int().positive().default(20_000),
      })
      .prefault({}),
    pricing_groups: z.record(id, pricingGroupSchema).default({ default: { multiplier: 1 } }),
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
    for (const [planId, plan] of Object.entries(cfg.plans)) {
      plan.models?.forEach((model, i) => {
        if (!cfg.models[model]) {
          ctx.addIssue({ code: "custom", path: ["plans", planId, "models", i], message: `unknown model "${model}"` });
        }
      });
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
export type PricingGroupConfig = z.infer<typeof pricingGroupSchema>;
