import { z } from "zod";
import type { Config } from "../config/schema.js";
import type { RequestRead } from "../db/faults.js";
import type { QuotaLedger } from "../quota/types.js";
import { ours } from "../openapi/operation.js";
import { route } from "../server/route.js";

// Quota units stay far below 2^53, so JSON numbers are exact here.
const quotaSchema = z.object({
  plan: z.string(),
  day: z.string().meta({ description: "The UTC day this account covers (YYYY-MM-DD)." }),
  allowance: z.int().meta({ description: "The plan's daily allowance in quota units." }),
  restored: z.int().meta({ description: "What restorations (reserve resets, received transfers) added today." }),
  used: z.int(),
  reserved: z.int().meta({ description: "Held by requests in flight." }),
  remaining: z.int(),
  resets_at: z.iso.datetime().meta({ description: "When the next UTC day's allowance starts." }),
  request_packs: z
    .array(
      z.object({
        model: z.string(),
        allowance: z.int().meta({ description: "Requests of this model the plan gives per UTC day." }),
        used: z.int(),
        reserved: z.int().meta({ description: "Held by requests in flight." }),
        remaining: z.int(),
      }),
    )
    .meta({ description: 'The plan\'s fixed-quota request packs today (docs/billing.md, "Request packs"); empty without any.' }),
});

export interface QuotaRouteDeps {
  ledger: QuotaLedger;
  config: Config;
  read: RequestRead;
}

/**
 * GET /api/v1/user/quota: today's account (quota units, UTC day): the plan's allowance, what restorations (reserve
 * resets, received transfers) added to it, used, reserved and remaining.
 */
export const quotaRoute = route<QuotaRouteDeps>(
  {
    method: "get",
    path: "/api/v1/user/quota",
    operationId: "getUserQuota",
    summary: "Today's quota account of the session user",
    tag: "Account",
    access: "session",
    ok: { status: 200, description: "Today's account, in quota units.", schema: ours("Quota", quotaSchema) },
  },
  ({ ledger, config, read }) =>
    async (c) => {
      const session = c.get("session");
      const allowance = BigInt((Object.hasOwn(config.plans, session.plan) ? config.plans[session.plan]!.daily_tokens : undefined) ?? 0);
      const balance = await read(() => ledger.balance({ kind: "daily_allowance", userId: session.userId, base: allowance }));
      const packs = (Object.hasOwn(config.plans, session.plan) && config.plans[session.plan]!.request_packs) || {};
      const requestPacks = await Promise.all(
        Object.entries(packs).map(async ([model, count]) => {
          const pack = await read(() =>
            ledger.balance({ kind: "request_pack", userId: session.userId, base: BigInt(count), scope: model }),
          );
          return { model, allowance: count, used: Number(pack.used), reserved: Number(pack.reserved), remaining: Number(pack.remaining) };
        }),
      );
      const quota: z.infer<typeof quotaSchema> = {
        plan: session.plan,
        day: balance.period,
        allowance: Number(balance.credits),
        restored: Number(balance.restored),
        used: Number(balance.used),
        reserved: Number(balance.reserved),
        remaining: Number(balance.remaining),
        resets_at: balance.resetsAt!.toISOString(),
        request_packs: requestPacks,
      };
      return c.json(quota);
    },
);
