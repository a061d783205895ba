import type { Config } from "../config/schema.js";
import { isLoopbackHost } from "../server/loopback.js";

/**
 * `Secure` on the session cookie unless the operator says otherwise: off by default only when the server listens
 * on loopback, where a plain-HTTP browser session on this machine must work (the demo, development).
 */
export function sessionCookieSecure(config: Config): boolean {
  return config.auth.cookie_secure ?? !isLoopbackHost(config.server.host);
}

/** The startup warning for a cookie sent over plain HTTP to other machines, or null. */
export function insecureCookieWarning(config: Config): string | null {
  if (config.auth.cookie_secure !== false || isLoopbackHost(config.server.host)) return null;
  return `auth.cookie_secure is false while the server listens on ${config.server.host}: the session cookie also travels over plain HTTP, where anyone on the path can read it`;
}
