import { deleteCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import { pricingGroupName } from "../config/plans-schema.js";
import type { Config } from "../config/schema.js";
import { ours } from "../openapi/operation.js";
import { readValidJson, validate } from "../server/body.js";
import type { BodyCaps } from "../server/body-rules.js";
import { route } from "../server/route.js";
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
import { loginBody } from "@model-gateway/worker-kit/wire/auth";
import { identifier, storedText } from "@model-gateway/worker-kit/wire/text";
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

const okRef = ours("Ok", okSchema);

export interface AuthRouteDeps {
  sessions: SessionService;
  users: UserService;
  apiKeys: ApiKeyService;
  config: Config;
  bodies: BodyCaps;
  read: RequestRead;
}

const cookieOptions = (config: Config) =>
  ({ httpOnly: true, sameSite: "Strict", path: "/api", secure: sessionCookieSecure(config) }) as const;

const login = route<AuthRouteDeps>(
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
  ({ sessions, config, bodies }) => {
    const cookie = extended(cookieOptions(config), { maxAge: config.auth.session_ttl_seconds });
    return async (c) => {
      const body = await readValidJson(c, loginBody, bodies.small);
      const result = await sessions.login(body.email, body.password);
      setCookie(c, SESSION_COOKIE, result.token, cookie);
      return c.json(result);
    };
  },
);

const logout = route<AuthRouteDeps>(
  {
    method: "post",
    path: "/api/v1/auth/logout",
    operationId: "logout",
    summary: "Ends the session",
    tag: "Auth",
    access: "session",
    ok: { status: 200, description: "Logged out; the cookie is cleared.", schema: okRef },
  },
  ({ sessions, config }) => {
    const cookie = cookieOptions(config);
    return [
      sessionAuth(sessions),
      async (c) => {
        await sessions.logout(c.get("session").sessionId);
        deleteCookie(c, SESSION_COOKIE, cookie);
        return c.json({ ok: true } satisfies z.infer<typeof okSchema>);
      },
    ];
  },
);

const me = route<AuthRouteDeps>(
  {
    method: "get",
    path: "/api/v1/user/me",
    operationId: "getMe",
    summary: "The session's user",
    tag: "Account",
    access: "session",
    ok: { status: 200, description: "The user.", schema: ours("Me", meSchema) },
  },
  () => (c) => {
    const { userId, email, role, plan } = c.get("session");
    return c.json({ id: userId, email, role, plan } satisfies z.infer<typeof meSchema>);
  },
);

const listUsers = route<AuthRouteDeps>(
  {
    method: "get",
    path: "/api/v1/admin/users",
    operationId: "adminListUsers",
    summary: "Every user",
    tag: "Admin",
    access: "admin",
    ok: { status: 200, description: "The users.", schema: ours("UserList", z.object({ users: z.array(adminUserSchema) })) },
  },
  ({ users, read }) =>
    async (c) =>
      c.json({ users: await read(() => users.list()) }),
);

const createUser = route<AuthRouteDeps>(
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
  ({ users, bodies }) =>
    async (c) => {
      const body = await readValidJson(c, createUserBody, bodies.small);
      return c.json(await users.create(body), 201);
    },
);

const listKeys = route<AuthRouteDeps>(
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
  ({ apiKeys, read }) =>
    async (c) => {
      const { user } = validate(listKeysQuery, c.req.query());
      return c.json({ keys: await read(() => apiKeys.list(user ? { user } : undefined)) });
    },
);

const createKey = route<AuthRouteDeps>(
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
  ({ apiKeys, bodies }) =>
    async (c) => {
      const body = await readValidJson(c, createKeyBody, bodies.small);
      return c.json(await apiKeys.create(body), 201);
    },
);

const revokeKey = route<AuthRouteDeps>(
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
  ({ apiKeys }) =>
    async (c) =>
      c.json(await apiKeys.revoke(c.req.param("id")!)),
);

/** Lets a worker check its bot token. */
const ping = route<AuthRouteDeps>(
  {
    method: "get",
    path: "/api/v1/internal/ping",
    operationId: "internalPing",
    summary: "Lets a support worker check its bot token",
    tag: "Internal",
    access: "bot",
    ok: { status: 200, description: "The token is accepted.", schema: okRef },
  },
  () => (c) => c.json({ ok: true } satisfies z.infer<typeof okSchema>),
);

/** Sessions (login, logout), the session's user, the admin's users and keys, and the workers' token check. */
export const authRoutes = [login, logout, me, listUsers, createUser, listKeys, createKey, revokeKey, ping];
