import type { MiddlewareHandler } from "hono";
import { errors } from "../errors.js";
import type { AppEnv } from "./context.js";

// Path and query parameters reach SQL as the router decodes them. The one character they can carry that PostgreSQL
// refuses is NUL (`%00`): invalid UTF-8 such as an encoded lone surrogate decodes to U+FFFD or stays encoded.
// Refused here, once for every route, so no handler sees it (docs/security.md, "Input validation and logs").

const NUL = "%00";

/** The query parameter whose name or value carries `%00`, or null when it is in the path. */
function paramOf(url: string): string | null {
  const query = url.indexOf("?");
  if (query === -1 || url.indexOf(NUL) < query) return null;
  for (const pair of url.slice(query + 1).split("&")) {
    if (!pair.includes(NUL)) continue;
    // The name as sent (bounded): decoding it could fail, and it only has to point at the parameter.
    const name = pair.split("=", 1)[0]!;
    return name.includes(NUL) || name.length > 64 ? "query" : name;
  }
  return "query";
}

export function refuseNulInUrl(): MiddlewareHandler<AppEnv> {
  return async function refuseNulInUrl(c, next) {
    const url = c.req.url;
    if (url.includes(NUL)) {
      const param = paramOf(url);
      throw errors.badRequest(`Invalid ${param ?? "path"}: must not contain NUL characters (%00)`, param, "invalid_value");
    }
    await next();
  };
}
