import type { z } from "zod";
import { SYSTEMONE_KEYS, type modelSchema } from "./catalog-schema.js";
import type { planSchema } from "./plans-schema.js";

// The checks no section's own schema can make (schema.ts runs them once the whole file has parsed): references
// from one section to another, keys only one model kind takes, settings that must agree. Each adds an issue and
// goes on, so the operator sees every problem at once.

/** What the checks read of a parsed config. */
export interface CrossCheckedConfig {
  providers: Record<string, unknown>;
  models: Record<string, z.infer<typeof modelSchema>>;
  plans: Record<string, z.infer<typeof planSchema>>;
  retention: { ledger_days: number };
  quota: { max_hold_seconds: number };
  metrics: { enabled: boolean; token?: string; listen?: { port: number } };
  server: { port: number };
  pricing_groups: Record<string, unknown>;
  default_plan: string;
}

export function checkAcrossSections(cfg: CrossCheckedConfig, ctx: z.RefinementCtx): void {
  checkModelTargets(cfg, ctx);
  checkModelKeys(cfg, ctx);
  checkPlans(cfg, ctx);
  checkSettings(cfg, ctx);
}

function checkModelTargets(cfg: CrossCheckedConfig, ctx: z.RefinementCtx): void {
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
}

/** Keys only one kind of model takes, and reseller aliases no other model or alias has. */
function checkModelKeys(cfg: CrossCheckedConfig, ctx: z.RefinementCtx): void {
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
}

function checkPlans(cfg: CrossCheckedConfig, ctx: z.RefinementCtx): void {
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
}

/** Settings of different sections that must agree. */
function checkSettings(cfg: CrossCheckedConfig, ctx: z.RefinementCtx): void {
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
}
