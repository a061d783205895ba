import { z } from "zod";
import { configId } from "./catalog-schema.js";

// The config's plans and pricing groups (schema.ts assembles the whole file; docs/configuration.md).

export const planSchema = z.strictObject({
  daily_tokens: z.int().nonnegative(),
  weekly_resets: z.int().nonnegative().default(0),
  context_limit: z.int().positive(),
  /** Public model IDs this plan may use; absent = every model. */
  models: z.array(configId).optional(),
  /**
   * Fixed-quota request packs (docs/billing.md, "Request packs"): public model ID -> requests per UTC day. A
   * subscription request to such a model counts one request on the pack, not tokens on the daily allowance.
   */
  request_packs: z.record(configId, z.int().positive().max(1_000_000_000)).optional(),
});

export const PRICING_GROUP_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
export const isPricingGroupName = (name: string): boolean => PRICING_GROUP_NAME.test(name) && !(name in Object.prototype);
const PRICING_GROUP_RULE = "must be 1 to 64 of a-z, 0-9, '_', '.', '-', starting with a letter or digit, and not a name every object has";
export const pricingGroupName = z.string().refine(isPricingGroupName, { error: PRICING_GROUP_RULE });

export const pricingGroupSchema = z.strictObject({
  /** Applies to every quota charge of keys in the group (the key's global multiplier). */
  multiplier: z.number().nonnegative().default(1),
});
