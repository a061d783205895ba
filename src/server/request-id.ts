import { randomUUID } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import type { AppEnv } from "./context.js";

// Always minted here, never taken from the client: users cite this ID in support cases, so it must be unique
// and ours.
export const newRequestId = () => `req_${randomUUID().replaceAll("-", "")}`;

/**
 * Assigns the request id, a child logger bound to it, the headers every response carries, and one access-log
 * line per request (never headers or bodies).
 */
export function requestContext(logger: Logger): MiddlewareHandler<AppEnv> {
  return async function requestContext(c, next) {
    const started = performance.now();
    const requestId = newRequestId();
    c.set("requestId", requestId);
    c.set("log", logger.child({ req_id: requestId }));
    // Set before the handler runs, so they are part of the response as it is built: editing a finished
    // response makes @hono/node-server rebuild it.
    c.header("X-Request-Id", requestId);
    c.header("Cache-Control", "no-store");
    c.header("X-Content-Type-Options", "nosniff");
    await next();
    c.get("log").info(
      {
        method: c.req.method,
        route: c.req.routePath,
        status: c.res.status,
        latency_ms: Math.round((performance.now() - started) * 100) / 100,
      },
      "request",
    );
  };
}
