import { Hono } from "hono";
import { z } from "zod";
import type { RequestRead } from "../db/faults.js";
import { ours, type OperationDescription } from "../server/api-description.js";
import { readValidJson } from "../server/body.js";
import type { BodyCaps } from "../server/body-rules.js";
import type { AppEnv } from "../server/context.js";
import { idempotencyErrors, idempotencyHeaderDescription, idempotencyKeyOf, keyedJson } from "./idempotency-header.js";
import { resellerBalanceSchema, type ResellerAccounts } from "./reseller-accounts.js";

// The HTTP face of the reseller balances (reseller-accounts.ts): a user reads their own; an admin reads any and
// credits one, idempotently by the Idempotency-Key header.

const creditBody = z.object({
  usd: z.string().meta({ description: "A positive decimal amount in USD, at most 9 decimals: `25` or `0.50`." }),
  note: z.string().optional().meta({ description: "Kept with the credit, for the record (at most 500 characters)." }),
});

/** GET /api/v1/user/reseller-balance: the session user's own balance (zeros before any credit). */
export function resellerUserRoutes(deps: { accounts: ResellerAccounts; read: RequestRead }) {
  return new Hono<AppEnv>().get("/reseller-balance", async (c) =>
    c.json(await deps.read(() => deps.accounts.balance(c.get("session").userId))),
  );
}

/** Mounted under /api/v1/admin (admin session; CSRF on POST). */
export function resellerAdminRoutes(deps: { accounts: ResellerAccounts; bodies: BodyCaps; read: RequestRead }) {
  return new Hono<AppEnv>()
    .get("/reseller-balances/:user", async (c) => c.json(await deps.read(() => deps.accounts.balance(c.req.param("user")))))
    .post("/reseller-balances/:user/credits", async (c) => {
      const key = idempotencyKeyOf(c);
      const body = await readValidJson(c, creditBody, deps.bodies.small);
      return keyedJson(c, await deps.accounts.credit(c.req.param("user"), body.usd, body.note, key));
    });
}

const balance = ours("ResellerBalance", resellerBalanceSchema);
const userParam = { user: "The user's ID or email." };

export const resellerOperations: OperationDescription[] = [
  {
    method: "get",
    path: "/api/v1/user/reseller-balance",
    operationId: "getResellerBalance",
    summary: "The session user's own pay-as-you-go balance",
    tag: "Account",
    access: "session",
    ok: { status: 200, description: "The balance (zeros before any credit).", schema: balance },
  },
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
];
