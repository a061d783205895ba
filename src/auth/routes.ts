import { Hono } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import type { Config } from "../config/schema.js";
import { readValidJson } from "../server/body.js";
import type { AppEnv } from "../server/context.js";
import { SESSION_COOKIE, sessionAuth } from "./middleware.js";
import type { ApiKeyService, SessionService, UserService } from "./types.js";
import { extended } from "../objects.js";
import type { RequestRead } from "../db/faults.js";

// Bodies are checked for shape here; the services own the business rules (email format, password length,
// known plans and models) so the CLI gets the same checks.

const loginBody = z.object({ email: z.string().min(1), password: z.string().min(1) });

const createUserBody = z.object({
  email: z.string(),
  password: z.string(),
  role: z.enum(["user", "admin"]).optional(),
  plan: z.string().optional(),
});

const createKeyBody = z.object({
  user: z.string().min(1),
  kind: z.enum(["inference", "reseller"]).optional(),
  name: z.string().optional(),
  models: z.array(z.string()).nullable().optional(),
  pricing_group: z.string().optional(),
});

export function authRoutes(deps: { sessions: SessionService; config: Config; bodyLimit: number }) {
  const { sessions, config, bodyLimit } = deps;
  const cookieOptions = { httpOnly: true, sameSite: "Strict", path: "/api", secure: config.auth.cookie_secure } as const;
  return new Hono<AppEnv>()
    .post("/login", async (c) => {
      const body = await readValidJson(c, loginBody, bodyLimit);
      const result = await sessions.login(body.email, body.password);
      setCookie(c, SESSION_COOKIE, result.token, extended(cookieOptions, { maxAge: config.auth.session_ttl_seconds }));
      return c.json(result);
    })
    .post("/logout", sessionAuth(sessions), async (c) => {
      await sessions.logout(c.get("session").sessionId);
      deleteCookie(c, SESSION_COOKIE, cookieOptions);
      return c.json({ ok: true });
    });
}

export function userRoutes() {
  return new Hono<AppEnv>().get("/me", (c) => {
    const { userId, email, role, plan } = c.get("session");
    return c.json({ id: userId, email, role, plan });
  });
}

export function adminRoutes(deps: { users: UserService; apiKeys: ApiKeyService; bodyLimit: number; read: RequestRead }) {
  const { users, apiKeys, bodyLimit, read } = deps;
  return new Hono<AppEnv>()
    .get("/users", async (c) => c.json({ users: await read(() => users.list()) }))
    .post("/users", async (c) => {
      const body = await readValidJson(c, createUserBody, bodyLimit);
      return c.json(await users.create(body), 201);
    })
    .get("/keys", async (c) => {
      const user = c.req.query("user");
      return c.json({ keys: await read(() => apiKeys.list(user ? { user } : undefined)) });
    })
    .post("/keys", async (c) => {
      const body = await readValidJson(c, createKeyBody, bodyLimit);
      return c.json(await apiKeys.create(body), 201);
    })
    .post("/keys/:id/revoke", async (c) => c.json(await apiKeys.revoke(c.req.param("id"))));
}

/** Worker endpoints arrive later; /ping lets a worker check its token now. */
export function internalRoutes() {
  return new Hono<AppEnv>().get("/ping", (c) => c.json({ ok: true }));
}
