import { z } from "zod";
import type { RequestRead } from "../db/faults.js";
import { ours } from "../openapi/operation.js";
import { readValidJson } from "../server/body.js";
import type { BodyCaps } from "../server/body-rules.js";
import { route } from "../server/route.js";
import { idempotencyErrors, idempotencyHeaderDescription, idempotencyKeyOf, keyedJson } from "./idempotency-header.js";
import { resellerBalanceSchema, type ResellerAccounts } from "./reseller-accounts.js";

// The HTTP face of the reseller balances (reseller-accounts.ts): a user reads their own; an admin reads any and
// credits one, idempotently by the Idempotency-Key header.

const creditBody = z.object({
  usd: z.string().meta({ description: "A positive decimal amount in USD, at most 9 decimals: `25` or `0.50`." }),
  note: z.string().optional().meta({ description: "Kept with the credit, for the record (at most 500 characters)." }),
});

const balance = ours("ResellerBalance", resellerBalanceSchema);
const userParam = { user: "The user's ID or email." };

export interface ResellerRouteDeps {
  resellers: ResellerAccounts;
  bodies: BodyCaps;
  read: RequestRead;
}

const ownBalance = route<ResellerRouteDeps>(
  {
    method: "get",
    path: "/api/v1/user/reseller-balance",
    operationId: "getResellerBalance",
    summary: "The session user's own pay-as-you-go balance",
    tag: "Account",
    access: "session",
    ok: { status: 200, description: "The balance (zeros before any credit).", schema: balance },
  },
  ({ resellers, read }) =>
    async (c) =>
      c.json(await read(() => resellers.balance(c.get("session").userId))),
);

const userBalance = route<ResellerRouteDeps>(
  {
    method: "get",
    path: "/api/v1/admin/reseller-balances/{user}",
    operationId: "adminGetResellerBalance",
    summary: "A user's pay-as-you-go balance",
    tag: "Admin",
    access: "admin",
    pathParams: userParam,
    ok: { status: 200, description: "The balance.", schema: balance },
    errors: ["user_not_found"],
  },
  ({ resellers, read }) =>
    async (c) =>
      c.json(await read(() => resellers.balance(c.req.param("user")!))),
);

const credit = route<ResellerRouteDeps>(
  {
    method: "post",
    path: "/api/v1/admin/reseller-balances/{user}/credits",
    operationId: "adminCreditResellerBalance",
    summary: "Credits a user's pay-as-you-go balance",
    tag: "Admin",
    access: "admin",
    pathParams: userParam,
    headers: idempotencyHeaderDescription("credit"),
    body: ours("ResellerCredit", creditBody),
    ok: { status: 201, description: "The balance after the credit (a replay: after the first credit with that key).", schema: balance },
    errors: ["user_not_found", ...idempotencyErrors],
  },
  ({ resellers, bodies }) =>
    async (c) => {
      const key = idempotencyKeyOf(c);
      const body = await readValidJson(c, creditBody, bodies.small);
      return keyedJson(c, await resellers.credit(c.req.param("user")!, body.usd, body.note, key));
    },
);

/** A user reads their own balance (zeros before any credit); an admin reads anyone's and credits it. */
export const resellerRoutes = [ownBalance, userBalance, credit];
