import { chatQuota } from "../billing/chat-quota.js";
import { imageQuota, imageQuotaEstimate, type ImageRequest } from "../billing/image-quota.js";
import { rateCardFor, systemOneQuota, systemOneResellerPrice, systemOneUpstreamCost } from "../billing/systemone.js";
import type { Catalog, CatalogModel } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import { GatewayError } from "../errors.js";
import type { Target, UsageReport } from "../providers/types.js";
import type { MeteredKind } from "../quota/types.js";
import type { ApiKeyPrincipal } from "../auth/principals.js";

// How a request is priced is the route's choice (each model kind has its formula in src/billing), and so is
// which balance pays: the day's allowance in quota units, or a reseller's USD balance in nano-dollars. The
// metering path prices the admission estimate and the real usage with the same one.

export interface Pricing {
  account: MeteredKind;
  /** Which account of the kind pays, where a user has several (a request pack's model). */
  scope?: string;
  /** The charge of a usage in the account's unit: the hold prices the admission estimate, settlement the real usage. */
  charge(usage: UsageReport): bigint;
  /** The estimated upstream cost in USD (exact decimal text) of a usage on the target that answered; null when unknown. */
  upstreamCost(usage: UsageReport, target: Target): string | null;
  /** What admission holds when the route knows better than pricing the token estimate (a per-image floor). */
  hold?: bigint;
}

/**
 * The pricing of one request; `byok` when it carries the client's own upstream key (charged by
 * quota.byok_charge_ratio). Throws a GatewayError when the key may not be billed for the model at all.
 */
export type PricingFor = (model: CatalogModel, key: ApiKeyPrincipal, config: Config, byok: boolean) => Pricing;

/** Each config's pricing groups as a Map, built once: a group name is data, never a member of a plain object. */
const groupTables = new WeakMap<Config["pricing_groups"], Map<string, number>>();

/** The multiplier of pricing group `name` (the `default` group's for a group no longer configured). */
export function pricingGroupMultiplier(config: Config, name: string): number {
  let groups = groupTables.get(config.pricing_groups);
  if (!groups) {
    groups = new Map(Object.entries(config.pricing_groups).map(([group, settings]) => [group, settings.multiplier]));
    groupTables.set(config.pricing_groups, groups);
  }
  return groups.get(name) ?? groups.get("default")!;
}

/** The key's pricing-group (global) multiplier. */
const groupMultiplier = (key: ApiKeyPrincipal, config: Config) => pricingGroupMultiplier(config, key.pricingGroup);

/** The share of the charge a request on the client's own upstream key pays (absent: all of it). */
const byokRatio = (config: Config, byok: boolean) => (byok ? config.quota.byok_charge_ratio : undefined);

/** No rate card prices these routes' upstreams yet. */
const unknownCost = () => null;

/** Chat, responses and embeddings: prompt, cached and completion tokens on the day's allowance (docs/billing.md). */
export const chatPricing: PricingFor = (model, key, config, byok) => {
  const rates = {
    completionRatio: model.config.completion_ratio,
    cachedRatio: model.config.cached_ratio,
    tokenMultiplier: model.config.token_multiplier,
    groupMultiplier: groupMultiplier(key, config),
    byokRatio: byokRatio(config, byok),
  };
  return { account: "daily_allowance", charge: (usage) => chatQuota(usage, rates), upstreamCost: unknownCost };
};

/**
 * Image generations and edits (docs/billing.md, "Image quota"), on the day's allowance for every key kind: the
 * hold is the per-image floor of the images requested; the charge prices the answer's ImageBilling.
 */
export const imagePricing =
  (request: ImageRequest): PricingFor =>
  (model, key, config, byok) => {
    const rates = {
      tokenMultiplier: model.config.token_multiplier,
      groupMultiplier: groupMultiplier(key, config),
      byokRatio: byokRatio(config, byok),
    };
    return {
      account: "daily_allowance",
      hold: imageQuotaEstimate(request, rates),
      charge: (usage) =>
        // An answer without its ImageBilling is billed as if its usage were absent: never free.
        imageQuota(usage.image ?? { kind: "fallback", images: request.images, totalTokens: undefined, reason: null }, request, rates),
      upstreamCost: unknownCost,
    };
  };

/**
 * The evaluation service (docs/billing.md): input tokens with the long-context multiplier, on the day's
 * allowance, or for reseller keys at the model's price profile on their USD balance (403 when it has none).
 */
export const systemOnePricing: PricingFor = (model, key, config, byok) => {
  const { long_context: longContext, reseller_price: resellerPrice } = model.config;
  const context = longContext && { thresholdTokens: longContext.threshold_tokens, multiplier: longContext.multiplier };
  const upstreamCost = (usage: UsageReport, target: Target) => {
    const card = rateCardFor(target.upstreamModel, config.systemone.rate_cards);
    return card && systemOneUpstreamCost(usage.promptTokens, usage.completionTokens, card);
  };
  if (key.kind === "reseller") {
    if (!resellerPrice) {
      throw new GatewayError({
        message: `The model '${model.id}' has no pay-as-you-go price, so reseller keys cannot use it.`,
        code: "model_not_priced",
        param: "model",
      });
    }
    const price = resellerPrice.input_usd_per_million;
    return {
      account: "reseller_usd",
      charge: (usage) => systemOneResellerPrice(usage.promptTokens, price, context, byokRatio(config, byok)),
      upstreamCost,
    };
  }
  const rates = {
    tokenMultiplier: model.config.token_multiplier,
    groupMultiplier: groupMultiplier(key, config),
    longContext: context,
    byokRatio: byokRatio(config, byok),
  };
  return { account: "daily_allowance", charge: (usage) => systemOneQuota(usage.promptTokens, rates), upstreamCost };
};

const oneRequest = () => 1n;

/**
 * A request that would pay with the day's allowance, to a model its plan has a request pack for (docs/billing.md,
 * "Request packs"), pays one request of the pack instead, whatever its tokens; the upstream cost estimate stays the
 * route's. Not with the client's own upstream key (that request pays the byok share of its tokens, or nothing).
 */
export function withRequestPack(pricing: Pricing, model: CatalogModel, key: ApiKeyPrincipal, config: Config, byok: boolean): Pricing {
  if (byok || pricing.account !== "daily_allowance") return pricing;
  const packs = Object.hasOwn(config.plans, key.plan) ? config.plans[key.plan]!.request_packs : undefined;
  if (!packs || !Object.hasOwn(packs, model.id)) return pricing;
  return { account: "request_pack", scope: model.id, hold: 1n, charge: oneRequest, upstreamCost: pricing.upstreamCost };
}

/** Evaluation models whose upstream (on some target) no rate card prices: their upstream cost is logged as unknown. */
export function unpricedEvaluators(catalog: Catalog, config: Config): { model: string; upstream: string }[] {
  return catalog
    .all()
    .filter((m) => m.config.kind === "systemone")
    .flatMap((m) =>
      m.targets
        .filter((t) => !rateCardFor(t.upstreamModel, config.systemone.rate_cards))
        .map((t) => ({ model: m.id, upstream: t.upstreamModel })),
    );
}
