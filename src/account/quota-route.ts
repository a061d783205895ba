import { Hono } from "hono";
import type { Config } from "../config/schema.js";
import type { RequestRead } from "../db/faults.js";
import type { QuotaLedger } from "../quota/types.js";
import type { AppEnv } from "../server/context.js";

/**
 * GET /api/v1/user/quota: today's account (quota units, UTC day): the plan's allowance, what restorations (reserve
 * resets, received transfers) added to it, used, reserved and remaining.
 */
export function userQuotaRoutes(deps: { ledger: QuotaLedger; config: Config; read: RequestRead }) {
  return new Hono<AppEnv>().get("/quota", async (c) => {
    const session = c.get("session");
    const allowance = BigInt(deps.config.plans[session.plan]?.daily_tokens ?? 0);
    const balance = await deps.read(() => deps.ledger.balance({ kind: "daily_allowance", userId: session.userId, base: allowance }));
    // Quota units stay far below 2^53, so JSON numbers are exact here.
    return c.json({
      plan: session.plan,
      day: balance.period,
      allowance: Number(balance.credits),
      restored: Number(balance.restored),
      used: Number(balance.used),
      reserved: Number(balance.reserved),
      remaining: Number(balance.remaining),
      resets_at: balance.resetsAt!.toISOString(),
    });
  });
}
