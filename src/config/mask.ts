import type { Config } from "./schema.js";

// What `gateway config check` prints: the resolved config with every credential replaced (docs/security.md,
// "Input validation and logs"). A credential hides in a field named for it, in a URL's userinfo
// (`https://user:pass@host`) or in a URL's query (`postgres://host/db?password=…`), whatever field holds the URL.

const MASK = "****";

/** Field names whose value is a credential: `password`, `jwt_secret`, `api_key`, `bot_token`, `sslpassword`… */
const SECRET_NAME = /(^|_)(pass|passwd|password|sslpassword|pwd|secret|token|key|api_?key|apikey|access_?key|credentials?)$/i;

/** Query parameters whose value is a credential (libpq's, cloud SDKs', common HTTP APIs'). */
const SECRET_PARAM =
  /^(pass|passwd|password|sslpassword|sslkey|pwd|secret|client_secret|token|access_token|auth|auth_token|key|api_key|apikey|x-api-key|signature|sig|x-amz-signature|x-amz-credential|x-goog-signature|credential|credentials)$/i;

const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;

/** A URL with its userinfo and credential-like query values masked; text that is not a URL unchanged. */
export function maskUrl(value: string): string {
  if (!URL_LIKE.test(value)) return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // Not parsable, yet it may still carry `user:pass@`: mask whatever sits between `//` and the last `@` of the authority.
    return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, `$1${MASK}@`);
  }
  let changed = false;
  if (url.username || url.password) {
    url.username = MASK;
    url.password = url.password ? MASK : "";
    changed = true;
  }
  for (const name of new Set(url.searchParams.keys())) {
    if (!SECRET_PARAM.test(name)) continue;
    url.searchParams.set(name, MASK);
    changed = true;
  }
  return changed ? url.toString() : value;
}

/** The resolved config with every secret replaced, safe to print. */
export function maskSecrets(config: Config): unknown {
  const walk = (value: unknown, key: string): unknown => {
    if (typeof value === "string") {
      if (SECRET_NAME.test(key)) return value === "" ? "" : MASK;
      return maskUrl(value);
    }
    if (Array.isArray(value)) return value.map((item) => walk(item, ""));
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]));
    }
    return value;
  };
  return walk(config, "");
}
