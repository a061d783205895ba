import { errors } from "../errors.js";
import type { Exposition } from "../metrics/recorders.js";
import { bearerToken, secretCheck } from "./bearer.js";
import { requestHeader } from "./headers.js";
import { route } from "./route.js";

export interface MetricsRouteDeps {
  /** The instance's exposition; null when metrics are off or served on an address of their own. */
  exposition: Exposition | null;
  /** The token a scrape must send; none only on an address of its own (config.metrics.listen). */
  metricsToken: string | undefined;
}

/**
 * GET /metrics in Prometheus text format. With a token, a scrape must send `Authorization: Bearer <token>`
 * (compared in constant time; 401 in the error envelope otherwise); without one (only on a listener of its own,
 * config.metrics.listen) the network is the protection.
 */
export const metricsRoute = route<MetricsRouteDeps>(
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
  ({ exposition, metricsToken }) => {
    if (!exposition) return null;
    const matches = metricsToken === undefined ? undefined : secretCheck(metricsToken);
    return async (c) => {
      if (matches && !matches(bearerToken(requestHeader(c, "authorization")))) {
        throw errors.unauthorized("Invalid or missing metrics token; send it as 'Authorization: Bearer <token>'.");
      }
      return c.body(await exposition.scrape(), 200, { "content-type": exposition.contentType });
    };
  },
);
