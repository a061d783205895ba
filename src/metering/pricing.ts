import { chatQuota } from "../billing/chat-quota.js";
import { systemOneQuota } from "../billing/systemone.js";
import type { CatalogModel } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import type { UsageReport } from "../providers/types.js";
import type { ApiKeyPrincipal } from "../server/context.js";

// How a request is priced is the route's choice (each model kind has its formula in src/billing); the
// metering path prices the admission estimate and the real usage with the same one.

export interface Pricing {
  /** The charge of a usage, in quota units: the hold prices the admission estimate, settlement the real usage. */
  charge(usage: UsageReport): bigint;
}

export type PricingFor = (model: CatalogModel, key: ApiKeyPrincipal, config: Config) => Pricing;

/** The key's pricing-group (global) multiplier. */
const groupMultiplier = (key: ApiKeyPrincipal, config: Config) => (config.pricing_groups[key.pricingGroup] ?? config.pricing_groups.default!).multiplier;

/** Chat, responses and embeddings: prompt, cached and completion tokens (docs/billing.md). */
export const chatPricing: PricingFor = (model, key, config) => {
  const rates = {
    completionRatio: model.config.completion_ratio,
    cachedRatio: model.config.cached_ratio,
    tokenMultiplier: model.config.token_multiplier,
    groupMultiplier: groupMultiplier(key, config),
  };
  return { charge: (usage) => chatQuota(usage, rates) };
};

/** The evaluation service: input tokens only, with the long-context multiplier (docs/billing.md). */
export const systemOnePricing: PricingFor = (model, key, config) => {
  const { long_context: longContext } = model.config;
  const rates = {
    tokenMultiplier: model.config.token_multiplier,
    groupMultiplier: groupMultiplier(key, config),
    longContext: longContext && { thresholdTokens: longContext.threshold_tokens, multiplier: longContext.multiplier },
  };
  return { charge: (usage) => systemOneQuota(usage.promptTokens, rates) };
};
