import type { MiddlewareHandler } from "hono";
import { adminAuth, apiKeyAuth, botAuth, embedAuth, sessionAuth } from "../auth/middleware.js";
import type { AuthServices } from "../auth/types.js";
import type { Access } from "../openapi/operation.js";
import type { AppEnv } from "../server/context.js";

/** A credential check on a path (Hono's: `/v1/*` is everything under /v1), and the access it enforces. */
export interface CredentialCheck {
  path: string;
  access: Access;
  middleware(auth: AuthServices): MiddlewareHandler<AppEnv>;
}

/**
 * Every credential check, by path (docs/architecture.md, "Rules"): the app adds them before any route, so a
 * route under a prefix is behind its check whatever its own description says; test/unit/route-access.test.ts
 * holds every operation's `access` to the check of its path.
 */
export const CREDENTIAL_CHECKS: readonly CredentialCheck[] = [
  { path: "/v1/*", access: "apiKey", middleware: (auth) => apiKeyAuth(auth.keyAuth) },
  { path: "/native/*", access: "apiKey", middleware: (auth) => apiKeyAuth(auth.keyAuth) },
  // The routes of the Anthropic and Gemini SDKs outside /v1; Google's SDK may send the key in the query.
  { path: "/messages", access: "apiKey", middleware: (auth) => apiKeyAuth(auth.keyAuth) },
  { path: "/compatible/*", access: "apiKey", middleware: (auth) => apiKeyAuth(auth.keyAuth, { queryKey: true }) },
  // Images for `<img src>`: an embed token in the query, or a key in the headers (docs/api.md, "Embeddable images").
  { path: "/embed/*", access: "apiKey", middleware: (auth) => embedAuth(auth.keyAuth, auth.embedTokens) },
  { path: "/api/v1/user/*", access: "session", middleware: (auth) => sessionAuth(auth.sessions) },
  { path: "/api/v1/admin/*", access: "admin", middleware: (auth) => adminAuth(auth.sessions) },
  // The support workspace's staff side (docs/support.md): admins, with CSRF on every state change.
  { path: "/api/v1/assistant/*", access: "admin", middleware: (auth) => adminAuth(auth.sessions) },
  { path: "/api/v1/internal/*", access: "bot", middleware: (auth) => botAuth(auth.botToken) },
];
