import { Hono } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import { pricingGroupName } from "../config/plans-schema.js";
import type { Config } from "../config/schema.js";
import { ours, type OperationDescription } from "../server/api-description.js";
import { readValidJson, validate } from "../server/body.js";
import type { BodyCaps } from "../server/body-rules.js";
import type { AppEnv } from "../server/context.js";
import { SESSION_COOKIE, sessionAuth } from "./middleware.js";
import {
  adminUserSchema,
  createdApiKeySchema,
  loginResultSchema,
  publicApiKeySchema,
  publicUserSchema,
  type ApiKeyService,
  type SessionService,
  type UserService,
} from "./types.js";
import { extended } from "../objects.js";
import type { RequestRead } from "../db/faults.js";
import { loginBody } from "./wire.js";
import { identifier, storedText } from "../text-wire.js";
import { sessionCookieSecure } from "./cookie.js";

// Bodies are checked for shape here; the services own the business rules (email format, password length,
// known plans and models) so the CLI gets the same checks.

const createUserBody = z.object({
  email: storedText(),
  password: storedText(),
  role: z.enum(["user", "admin"]).optional(),
  plan: identifier().optional(),
});

const createKeyBody = z.object({
  user: identifier().meta({ description: "The owner's user ID or email." }),
  kind: z.enum(["inference", "reseller"]).optional(),
  name: storedText().optional(),
  models: z.array(identifier()).nullable().optional().meta({ description: "Restricts the key to these public model IDs." }),
  pricing_group: pricingGroupName
    .optional()
    .meta({ description: "A configured pricing group (`pricing_groups.<id>`); `default` when absent." }),
});

const listKeysQuery = z.object({ user: identifier().optional().meta({ description: "Only this user's keys (ID or email)." }) });

const okSchema = z.object({ ok: z.literal(true) });
const meSchema = publicUserSchema.pick({ id: true, email: true, role: true, plan: true });

export function authRoutes(deps: { sessions: SessionService; config: Config; bodies: BodyCaps }) {
  const { sessions, config, bodies } = deps;
  const cookieOptions = { httpOnly: true, sameSite: "Strict", path: "/api", secure: sessionCookieSecure(config) } as const;
  return new Hono<AppEnv>()
    .post("/login", async (c) => {
      const body = await readValidJson(c, loginBody, bodies.small);
      const result = await sessions.login(body.email, body.password);
      setCookie(c, SESSION_COOKIE, result.token, extended(cookieOptions, { maxAge: config.auth.session_ttl_seconds }));
      return c.json(result);
    })
    .post("/logout", sessionAuth(sessions), async (c) => {
      await sessions.logout(c.get("session").sessionId);
      deleteCookie(c, SESSION_COOKIE, cookieOptions);
      return c.json({ ok: true } satisfies z.infer<typeof okSchema>);
    });
}

export function userRoutes() {
  return new Hono<AppEnv>().get("/me", (c) => {
    const { userId, email, role, plan } = c.get("session");
    return c.json({ id: userId, email, role, plan } satisfies z.infer<typeof meSchema>);
  });
}

export function adminRoutes(deps: { users: UserService; apiKeys: ApiKeyService; bodies: BodyCaps; read: RequestRead }) {
  const { users, apiKeys, bodies, read } = deps;
  return new Hono<AppEnv>()
    .get("/users", async (c) => c.json({ users: await read(() => users.list()) }))
    .post("/users", async (c) => {
      const body = await readValidJson(c, createUserBody, bodies.small);
      return c.json(await users.create(body), 201);
    })
    .get("/keys", async (c) => {
      const { user } = validate(listKeysQuery, c.req.query());
      return c.json({ keys: await read(() => apiKeys.list(user ? { user } : undefined)) });
    })
    .post("/keys", async (c) => {
      const body = await readValidJson(c, createKeyBody, bodies.small);
      return c.json(await apiKeys.create(body), 201);
    })
    .post("/keys/:id/revoke", async (c) => c.json(await apiKeys.revoke(c.req.param("id"))));
}

/** Worker endpoints arrive later; /ping lets a worker check its token now. */
export function internalRoutes() {
  return new Hono<AppEnv>().get("/ping", (c) => c.json({ ok: true } satisfies z.infer<typeof okSchema>));
}

const okRef = ours("Ok", okSchema);

export const authOperations: OperationDescription[] = [
  {
    method: "post",
    path: "/api/v1/auth/login",
    operationId: "login",
    summary: "Logs in with email and password",
    description: "Returns the session token and its CSRF token, and sets the session cookie. Failed attempts are throttled.",
    tag: "Auth",
    access: "public",
    body: ours("LoginRequest", loginBody),
    ok: { status: 200, description: "Logged in.", schema: ours("LoginResult", loginResultSchema) },
    errors: ["invalid_credentials", "account_disabled", "login_rate_limited", "database_unavailable"],
  },
  {
    method: "post",
    path: "/api/v1/auth/logout",
    operationId: "logout",
    summary: "Ends the session",
    tag: "Auth",
    access: "session",
    ok: { status: 200, description: "Logged out; the cookie is cleared.", schema: okRef },
  },
  {
    method: "get",
    path: "/api/v1/user/me",
    operationId: "getMe",
    summary: "The session's user",
    tag: "Account",
    access: "session",
    ok: { status: 200, description: "The user.", schema: ours("Me", meSchema) },
  },
  {
    method: "get",
    path: "/api/v1/admin/users",
    operationId: "adminListUsers",
    summary: "Every user",
    tag: "Admin",
    access: "admin",
    ok: { status: 200, description: "The users.", schema: ours("UserList", z.object({ users: z.array(adminUserSchema) })) },
  },
  {
    method: "post",
    path: "/api/v1/admin/users",
    operationId: "adminCreateUser",
    summary: "Creates a user",
    tag: "Admin",
    access: "admin",
    body: ours("CreateUserRequest", createUserBody),
    ok: { status: 201, description: "The user.", schema: ours("AdminUser", adminUserSchema) },
    errors: ["invalid_request", "email_taken"],
  },
  {
    method: "get",
    path: "/api/v1/admin/keys",
    operationId: "adminListKeys",
    summary: "API keys (never their secrets)",
    tag: "Admin",
    access: "admin",
    query: listKeysQuery,
    ok: { status: 200, description: "The keys.", schema: ours("ApiKeyList", z.object({ keys: z.array(publicApiKeySchema) })) },
    errors: ["user_not_found"],
  },
  {
    method: "post",
    path: "/api/v1/admin/keys",
    operationId: "adminCreateKey",
    summary: "Creates an API key; the answer holds its secret, shown once",
    tag: "Admin",
    access: "admin",
    body: ours("CreateApiKeyRequest", createKeyBody),
    ok: { status: 201, description: "The key with its secret.", schema: ours("CreatedApiKey", createdApiKeySchema) },
    errors: ["invalid_request", "user_not_found"],
  },
  {
    method: "post",
    path: "/api/v1/admin/keys/{id}/revoke",
    operationId: "adminRevokeKey",
    summary: "Revokes an API key at once, in every gateway process",
    tag: "Admin",
    access: "admin",
    pathParams: { id: "The key's ID (a UUID; never the secret)." },
    ok: { status: 200, description: "The revoked key.", schema: ours("ApiKey", publicApiKeySchema) },
    errors: ["key_not_found"],
  },
  {
    method: "get",
    path: "/api/v1/internal/ping",
    operationId: "internalPing",
    summary: "Lets a support worker check its bot token",
    tag: "Internal",
    access: "bot",
    ok: { status: 200, description: "The token is accepted.", schema: okRef },
  },
];
