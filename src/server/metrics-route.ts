import { Hono } from "hono";
import { errors } from "../errors.js";
import type { Exposition } from "../metrics/recorders.js";
import { bearerToken, secretCheck } from "./bearer.js";
import type { AppEnv } from "./context.js";
import { requestHeader } from "./headers.js";

/**
 * GET /metrics in Prometheus text format. With a token, a scrape must send `Authorization: Bearer <token>`
 * (compared in constant time; 401 in the error envelope otherwise); without one (only on a listener of its own,
 * config.metrics.listen) the network is the protection.
 */
export function metricsRoutes(exposition: Exposition, token: string | undefined) {
  const matches = token === undefined ? undefined : secretCheck(token);
  return new Hono<AppEnv>().get("/metrics", async (c) => {
    if (matches && !matches(bearerToken(requestHeader(c, "authorization")))) {
      throw errors.unauthorized("Invalid or missing metrics token; send it as 'Authorization: Bearer <token>'.");
    }
    return c.body(await exposition.scrape(), 200, { "content-type": exposition.contentType });
  });
}
