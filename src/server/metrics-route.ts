import { Hono } from "hono";
import { errors } from "../errors.js";
import type { Exposition } from "../metrics/recorders.js";
import { bearerToken, secretCheck } from "./bearer.js";
import type { OperationDescription } from "./api-description.js";
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

export const metricsOperations: OperationDescription[] = [
  {
    method: "get",
    path: "/metrics",
    operationId: "getMetrics",
    summary: "Prometheus metrics (when `metrics.enabled`)",
    description:
      "Served here with the metrics token, or without one on `metrics.listen`, an address of its own; absent (404) while " +
      "metrics are off. docs/api.md lists the metrics.",
    tag: "Operations",
    access: "metrics",
    ok: { status: 200, description: "The Prometheus text exposition format.", contentType: "text/plain; version=0.0.4" },
  },
];
