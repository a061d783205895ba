import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { RequestMetrics } from "../metrics/recorders.js";
import type { AppEnv } from "./context.js";

/**
 * Counts every answered request by the route pattern that answered it (never the raw path: that is the
 * client's), the model and client protocol a metered route saw, and the status; mounted only when metrics are on.
 * A stream is counted when its response starts, with the status the client got.
 */
export function countRequests(metrics: RequestMetrics): MiddlewareHandler<AppEnv> {
  return async function countRequests(c, next) {
    await next();
    const metered = c.get("metered");
    metrics.request(routePath(c), metered?.modelId, metered?.clientProtocol, c.res.status);
  };
}
