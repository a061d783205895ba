import { Hono } from "hono";
import { z } from "zod";
import type { RequestRead } from "../db/faults.js";
import { readValidJson } from "../server/body.js";
import type { AppEnv } from "../server/context.js";
import type { ResellerAccounts } from "./reseller-accounts.js";

// The HTTP face of the reseller balances (reseller-accounts.ts): a user reads their own; an admin reads any and
// credits one.

const creditBody = z.object({ usd: z.string(), note: z.string().optional() });

/** GET /api/v1/user/reseller-balance: the session user's own balance (zeros before any credit). */
export function resellerUserRoutes(deps: { accounts: ResellerAccounts; read: RequestRead }) {
  return new Hono<AppEnv>().get("/reseller-balance", async (c) =>
    c.json(await deps.read(() => deps.accounts.balance(c.get("session").userId))),
  );
}

/** Mounted under /api/v1/admin (admin session; CSRF on POST). */
export function resellerAdminRoutes(deps: { accounts: ResellerAccounts; bodyLimit: number; read: RequestRead }) {
  return new Hono<AppEnv>()
    .get("/reseller-balances/:user", async (c) => c.json(await deps.read(() => deps.accounts.balance(c.req.param("user")))))
    .post("/reseller-balances/:user/credits", async (c) => {
      const body = await readValidJson(c, creditBody, deps.bodyLimit);
      return c.json(await deps.accounts.credit(c.req.param("user"), body.usd, body.note), 201);
    });
}
