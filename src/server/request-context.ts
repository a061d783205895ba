import type { Context, MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import type { AppEnv } from "./context.js";
import { newRequestId } from "../ids.js";
import { accessLogger } from "../logger.js";

// Always minted here, never taken from the client: users cite this ID in support cases, so it must be unique
// and ours (src/ids.ts says its layout).
export { newRequestId };

/**
 * The headers every response carries. Handlers that build their response themselves (src/server/respond.ts)
 * include them; every other response gets them from requestContext.
 */
export const standardHeaders = (requestId: string): Record<string, string> => ({
  "x-request-id": requestId,
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
});

/**
 * The logger bound to the request's id. Made on demand: a pino child (its bindings go through redaction) cost
 * as much as the rest of the request context, and most requests never log.
 */
export function requestLog(c: Context<AppEnv>): Logger | undefined {
  return c.get("logger")?.child({ req_id: c.get("requestId") });
}

/**
 * Assigns the request id, the headers every response carries, and one access-log line per request (never
 * headers or bodies), written by accessLogger: the line holds only fields of the gateway's own.
 */
export function requestContext(logger: Logger): MiddlewareHandler<AppEnv> {
  const access = accessLogger(logger);
  return async function requestContext(c, next) {
    const started = performance.now();
    const requestId = newRequestId();
    c.set("requestId", requestId);
    c.set("logger", logger);
    // Set before the handler runs, so they are part of the response as it is built: editing a finished
    // response makes @hono/node-server rebuild it.
    for (const [name, value] of Object.entries(standardHeaders(requestId))) c.header(name, value);
    await next();
    if (!access.isLevelEnabled("info")) return;
    access.info(
      {
        req_id: requestId,
        method: c.req.method,
        route: c.req.routePath,
        status: c.res.status,
        latency_ms: Math.round((performance.now() - started) * 100) / 100,
      },
      "request",
    );
  };
}
