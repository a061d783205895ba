import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { errors } from "../errors.js";
import { bearerToken, secretCheck } from "../server/bearer.js";
import type { AppEnv } from "../server/context.js";
import type { SessionPrincipal } from "./principals.js";
import { requestHeader } from "../server/headers.js";
import type { EmbedTokens } from "./embed-tokens.js";
import type { ApiKeyAuthenticator, SessionService } from "./types.js";

export const SESSION_COOKIE = "gw_session";

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * {root}/v1, /native, /messages and /compatible: an inference or reseller key, in whichever header the client's
 * official SDK uses (bearer: OpenAI; x-api-key: Anthropic; x-goog-api-key: Gemini). With `queryKey` (the Gemini
 * routes, as Google's own API does) also `?key=`, read only when no header carries one. No log line holds a
 * query string: the access log and the request log name the route, never the URL.
 */
export function apiKeyAuth(keyAuth: ApiKeyAuthenticator, opts: { queryKey?: boolean } = {}): MiddlewareHandler<AppEnv> {
  const missing = opts.queryKey
    ? "Missing API key; send it as 'Authorization: Bearer <key>' (or in x-goog-api-key, x-api-key or ?key=)."
    : "Missing API key; send it as 'Authorization: Bearer <key>' (or in x-api-key or x-goog-api-key).";
  return async function apiKeyAuth(c, next) {
    const secret =
      bearerToken(requestHeader(c, "authorization")) ??
      requestHeader(c, "x-api-key") ??
      requestHeader(c, "x-goog-api-key") ??
      (opts.queryKey ? c.req.query("key") : undefined);
    if (!secret) throw errors.unauthorized(missing);
    const principal = await keyAuth.authenticate(secret);
    if (!principal) throw errors.unauthorized("Invalid or revoked API key.");
    c.set("apiKey", principal);
    await next();
  };
}

async function requireSession(c: Context<AppEnv>, sessions: SessionService): Promise<SessionPrincipal> {
  const token = bearerToken(requestHeader(c, "authorization")) ?? getCookie(c, SESSION_COOKIE);
  if (!token) {
    throw errors.invalidSession(
      `Missing session; log in with POST /api/v1/auth/login and send the token as a bearer token or the ${SESSION_COOKIE} cookie.`,
    );
  }
  if (token.startsWith("gw_")) {
    throw errors.invalidSession("API keys do not authorise user endpoints; log in with POST /api/v1/auth/login instead.");
  }
  const session = await sessions.verify(token);
  if (!session) throw errors.invalidSession();
  c.set("session", session);
  return session;
}

/** /api/v1/user: a logged-in user of any role. */
export function sessionAuth(sessions: SessionService): MiddlewareHandler<AppEnv> {
  return async function sessionAuth(c, next) {
    await requireSession(c, sessions);
    await next();
  };
}

/** /api/v1/admin: an admin session, and the session's CSRF token on every state change. */
export function adminAuth(sessions: SessionService): MiddlewareHandler<AppEnv> {
  return async function adminAuth(c, next) {
    const session = await requireSession(c, sessions);
    if (session.role !== "admin") throw errors.forbidden("Admin role required.", "admin_required");
    if (STATE_CHANGING.has(c.req.method)) {
      const given = requestHeader(c, "x-csrf-token");
      if (!given || !sessions.csrfMatches(session.sessionId, given)) {
        throw errors.forbidden("Missing or invalid X-CSRF-Token header; send the csrf_token returned by login.", "csrf_failed");
      }
    }
    await next();
  };
}

/** /api/v1/internal: the support bot token. Without a configured token the surface is closed. */
export function botAuth(token: string | undefined): MiddlewareHandler<AppEnv> {
  const matches = token ? secretCheck(token) : undefined;
  return async function botAuth(c, next) {
    if (!matches?.(bearerToken(requestHeader(c, "authorization")))) throw errors.unauthorized("Invalid or missing bot token.");
    await next();
  };
}

/**
 * /embed: what `<img src>` can carry, which is no header (spec General rule 5, docs/api.md "Embeddable images"):
 * an embed token in `?token=`, or a key in the usual headers for clients that can send them. A key in the query
 * string is never taken: it would be a shared key in a page.
 */
export function embedAuth(keyAuth: ApiKeyAuthenticator, tokens: EmbedTokens): MiddlewareHandler<AppEnv> {
  const headerAuth = apiKeyAuth(keyAuth);
  return async function embedAuth(c, next) {
    const token = c.req.query("token");
    if (token === undefined) return headerAuth(c, next);
    const verified = token.length <= MAX_EMBED_TOKEN ? await tokens.verify(token) : null;
    if (!verified) throw errors.unauthorized("Invalid or expired embed token; mint a new one with POST /v1/embed/tokens.");
    c.set("apiKey", verified.key);
    c.set("embedGrant", verified.grant);
    await next();
  };
}

/** Longer than any token the gateway mints (a model ID of 128 characters, a digest, the JWT's framing). */
const MAX_EMBED_TOKEN = 2048;
