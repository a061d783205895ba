import type { Config } from "../config/schema.js";
import type { Pool } from "../db/pool.js";
import { errors } from "../errors.js";
import type { PolicyValues } from "./rules.js";
import { readPolicyRow, savePolicyRow } from "./transfers-sql.js";
import type { PolicyBody, PublicPolicy } from "./wire.js";

// The transfers' policy (docs/billing.md, "Token transfers"): the stored row, or the config's `transfers` before
// the first save (at revision 0); saved with an optimistic revision.

export const policyFromConfig = (defaults: Config["transfers"]): PolicyValues => ({
  enabled: defaults.enabled,
  minAmount: BigInt(defaults.min_amount),
  sendDailyLimit: BigInt(defaults.send_daily_limit),
  receiveDailyLimit: BigInt(defaults.receive_daily_limit),
  serviceDailyLimit: BigInt(defaults.service_daily_limit),
});

export async function readPolicy(pool: Pool, defaults: Config["transfers"]): Promise<PublicPolicy> {
  const row = await readPolicyRow(pool);
  const p = row ?? policyFromConfig(defaults);
  return {
    revision: row?.revision ?? 0,
    enabled: p.enabled,
    min_amount: Number(p.minAmount),
    send_daily_limit: Number(p.sendDailyLimit),
    receive_daily_limit: Number(p.receiveDailyLimit),
    service_daily_limit: Number(p.serviceDailyLimit),
    updated_by: row?.updatedBy ?? null,
    updated_at: row?.updatedAt?.toISOString() ?? null,
  };
}

export async function savePolicy(pool: Pool, defaults: Config["transfers"], body: PolicyBody, updatedBy: string): Promise<PublicPolicy> {
  const saved = await savePolicyRow(
    pool,
    body.revision,
    {
      enabled: body.enabled,
      minAmount: BigInt(body.min_amount),
      sendDailyLimit: BigInt(body.send_daily_limit),
      receiveDailyLimit: BigInt(body.receive_daily_limit),
      serviceDailyLimit: BigInt(body.service_daily_limit),
    },
    updatedBy,
  );
  if (saved === null) {
    const now = await readPolicy(pool, defaults);
    throw errors.conflict(
      `The policy changed since revision ${body.revision} (it is at revision ${now.revision}); read it again and resend your change.`,
    );
  }
  return readPolicy(pool, defaults);
}
