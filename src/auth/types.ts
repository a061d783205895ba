import type { ApiKeyPrincipal, SessionPrincipal } from "./principals.js";

// The contracts the rest of the gateway sees of src/auth. Implementations live beside this file.

export interface PublicUser {
  id: string;
  email: string;
  role: "user" | "admin";
  plan: string;
  created_at: string;
}

export interface PublicApiKey {
  id: string;
  user_id: string;
  name: string;
  kind: "inference" | "reseller";
  prefix: string;
  models: string[] | null;
  pricing_group: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

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
  create(input: CreateUserInput): Promise<PublicUser>;
  list(): Promise<PublicUser[]>;
  /** By id or email; null when absent. */
  find(idOrEmail: string): Promise<PublicUser | null>;
}

export interface ApiKeyService {
  /** Returns the secret exactly once, with the stored record. */
  create(input: CreateKeyInput): Promise<PublicApiKey & { key: string }>;
  list(filter?: { user?: string }): Promise<PublicApiKey[]>;
  /** Revokes at once in every process sharing the database. Unknown id → not_found GatewayError. */
  revoke(id: string): Promise<PublicApiKey>;
}

export interface LoginResult {
  token: string;
  csrf_token: string;
  expires_at: string;
  user: PublicUser;
}

export interface SessionService {
  login(email: string, password: string): Promise<LoginResult>;
  /** Null for a bad signature, expired or revoked session. */
  verify(token: string): Promise<SessionPrincipal | null>;
  logout(sessionId: string): Promise<void>;
  csrfTokenFor(sessionId: string): string;
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
  apiKeys: ApiKeyService;
  sessions: SessionService;
  keyAuth: ApiKeyAuthenticator;
  /** SUPPORT_BOT_TOKEN; undefined disables the internal worker surface (every call 401). */
  botToken: string | undefined;
}
