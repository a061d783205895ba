import type { Context, Hono } from "hono";
import { errors } from "../errors.js";
import type { AppEnv } from "./context.js";
import { errorResponse } from "./error-envelope.js";

interface CompiledRoute {
  method: string;
  pattern: RegExp;
}

function compile(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) => {
      if (segment === "*") return ".*";
      // A parameter with its own pattern (`:target{.+}`) matches what that pattern does, slashes included.
      const pattern = /^:\w+\{(.+)\}$/.exec(segment)?.[1];
      if (pattern) return pattern;
      if (segment.startsWith(":")) return "[^/]+";
      return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  return new RegExp(`^${source}/?$`);
}

/**
 * notFound handler that tells 404 from 405: a path served under another method answers 405 with `Allow`.
 * The route table is compiled once, on first use, after every route has been registered.
 */
export function notFoundOrMethodNotAllowed(app: Hono<AppEnv>) {
  let table: CompiledRoute[] | undefined;
  return function notFound(c: Context<AppEnv>): Response {
    table ??= app.routes
      .filter((r) => r.method !== "ALL" && !r.path.endsWith("*"))
      .map((r) => ({ method: r.method, pattern: compile(r.path) }));
    const allow = [...new Set(table.filter((r) => r.pattern.test(c.req.path)).map((r) => r.method))];
    if (allow.length > 0) {
      if (allow.includes("GET")) allow.push("HEAD");
      return errorResponse(c, errors.methodNotAllowed(c.req.method, c.req.path, allow));
    }
    return errorResponse(c, errors.notFound(`Unknown route: ${c.req.method} ${c.req.path}.`, "unknown_route"));
  };
}
