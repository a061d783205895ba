import { z } from "zod";
import type { EmbedTokens } from "./embed-tokens.js";
import type { ApiKeyPrincipal, SessionPrincipal } from "./principals.js";
import { publicUserSchema, type LoginResult } from "@model-gateway/worker-kit/wire/auth";

export { loginResultSchema, publicUserSchema, type LoginResult, type PublicUser } from "@model-gateway/worker-kit/wire/auth";

// The contracts the rest of the gateway sees of src/auth. Implementations live beside this file. What the HTTP
// API answers is a zod schema, so the API description (GET /openapi.json) and the types are one.

export const publicApiKeySchema = z.object({
  id: z.string(),
  user_id: z.string(),
  name: z.string(),
  kind: z.enum(["inference", "reseller"]),
  prefix: z.string().meta({ description: "The secret's first characters, to recognise it." }),
  models: z.array(z.string()).nullable().meta({ description: "The public model IDs the key may use; null for every model." }),
  pricing_group: z.string(),
  created_at: z.iso.datetime(),
  revoked_at: z.iso.datetime().nullable(),
  last_used_at: z.iso.datetime().nullable(),
});

export type PublicApiKey = z.infer<typeof publicApiKeySchema>;

/** A user as admins see it: with whether it is disabled. */
export const adminUserSchema = publicUserSchema.extend({
  disabled_at: z.iso
    .datetime()
    .nullable()
    .meta({ description: "When the user was disabled (no login, sessions ended, keys refused); null while enabled." }),
});

export type AdminUser = z.infer<typeof adminUserSchema>;

export const createdApiKeySchema = publicApiKeySchema.extend({
  key: z.string().meta({ description: "The secret, shown this once." }),
});

export interface CreateUserInput {
  email: string;
  password: string;
  role?: "user" | "admin";
  plan?: string;
}

export interface CreateKeyInput {
  /** A user id (uuid) or an email. */
  user: string;
  kind?: "inference" | "reseller";
  name?: string;
  models?: string[] | null;
  pricing_group?: string;
}

export interface UserService {
  create(input: CreateUserInput): Promise<AdminUser>;
  list(): Promise<AdminUser[]>;
  /** By id or email; null when absent. */
  find(idOrEmail: string): Promise<AdminUser | null>;
  /** By id or email; an unknown one is 404 user_not_found. */
  get(idOrEmail: string): Promise<AdminUser>;
  /** Moves the user to another configured plan (unknown plan → 400, unknown user → user_not_found). */
  setPlan(idOrEmail: string, plan: string): Promise<AdminUser>;
}

/** Takes a user's access away and back, in every process sharing the database. Unknown user → user_not_found. */
export interface UserAccessService {
  /** No login from now on; their sessions end and their keys are refused at once. Disabling twice keeps the first time. */
  disable(idOrEmail: string): Promise<AdminUser>;
  /** Logins and keys work again; sessions ended by the disable stay ended. */
  enable(idOrEmail: string): Promise<AdminUser>;
  /** Deletes a disabled user and everything they own (cascade); refuses an enabled one (conflict). */
  remove(idOrEmail: string): Promise<AdminUser>;
}

export interface ApiKeyService {
  /** Returns the secret exactly once, with the stored record. */
  create(input: CreateKeyInput): Promise<z.infer<typeof createdApiKeySchema>>;
  list(filter?: { user?: string }): Promise<PublicApiKey[]>;
  /** Revokes at once in every process sharing the database. Unknown id → not_found GatewayError. */
  revoke(id: string): Promise<PublicApiKey>;
}

export interface SessionService {
  login(email: string, password: string): Promise<LoginResult>;
  /** Null for a bad signature, expired or revoked session. */
  verify(token: string): Promise<SessionPrincipal | null>;
  logout(sessionId: string): Promise<void>;
  csrfTokenFor(sessionId: string): string;
  /** True for the session's CSRF token under the current or the previous signing secret. */
  csrfMatches(sessionId: string, given: string): boolean;
  /** Deletes sessions that expired before `before`; returns how many. */
  pruneExpired(before: Date): Promise<number>;
  /** Deletes login-attempt counts whose window ended before `before`; returns how many. */
  pruneLoginAttempts(before: Date): Promise<number>;
}

export interface ApiKeyAuthenticator {
  /** Null for unknown or revoked keys. Cached; revocation is seen at once across processes. */
  authenticate(secret: string): Promise<ApiKeyPrincipal | null>;
  close(): Promise<void>;
}

export interface AuthServices {
  users: UserService;
  userAccess: UserAccessService;
  apiKeys: ApiKeyService;
  sessions: SessionService;
  keyAuth: ApiKeyAuthenticator;
  /** Tokens for `<img src>` on GET /embed/image:{model}, signed with a key derived from the session secret. */
  embedTokens: EmbedTokens;
  /** SUPPORT_BOT_TOKEN; undefined disables the internal worker surface (every call 401). */
  botToken: string | undefined;
}
