import { Hono } from "hono";
import type { Logger } from "pino";
import type { AuthServices } from "../auth/types.js";
import type { Catalog } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import { requestRead } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import { createMediaCache } from "../media/media-cache.js";
import type { Metering } from "../metering/meter.js";
import type { Exposition, Metrics } from "../metrics/recorders.js";
import type { Providers } from "../providers/registry.js";
import type { SafeDownloader } from "../providers/safe-download.js";
import type { ResellerAccounts } from "../balances/reseller-accounts.js";
import type { ReserveResets } from "../balances/reserve-resets.js";
import type { Transfers } from "../transfers/transfers.js";
import type { Clock } from "../time/clock.js";
import type { QuotaLedger } from "../quota/types.js";
import type { BodyBudget } from "../server/body-budget.js";
import { bodyRules } from "../server/body.js";
import type { BodyCaps } from "../server/body-rules.js";
import type { AppEnv } from "../server/context.js";
import { handleError } from "../server/error-envelope.js";
import { metricsRoute } from "../server/metrics-routes.js";
import { notFoundOrMethodNotAllowed } from "../server/not-found.js";
import { requestContext } from "../server/request-context.js";
import { countRequests } from "../server/request-metrics.js";
import { mountRoutes } from "../server/route.js";
import { refuseNulInUrl } from "../server/url-text.js";
import { CREDENTIAL_CHECKS } from "./credential-checks.js";
import { apiDescription, ROUTES, type RouteDeps } from "./routes.js";

export interface AppDeps {
  config: Config;
  pool: Pool;
  /** The request log's database (analytics.database_url); the main pool when the log shares it. */
  logPool: Pool;
  /** What the code that retries reports of database faults; /readyz reads it. */
  health: DatabaseHealth;
  logger: Logger;
  auth: AuthServices;
  catalog: Catalog;
  ledger: QuotaLedger;
  providers: Providers;
  /** Fetches the image links upstreams answer with (SSRF-checked, capped). */
  download: SafeDownloader;
  metering: Metering;
  /** The process-wide budget of evaluation request bodies (`systemone.admission_budget_bytes`). */
  bodyBudget: BodyBudget;
  /** The process-wide budget of every other route's request bodies (`server.body_budget_bytes`). */
  requestBodyBudget: BodyBudget;
  resellers: ResellerAccounts;
  resets: ReserveResets;
  transfers: Transfers;
  /** The instance's recorders; `exposition` null when metrics are off. */
  metrics: Metrics;
  /** The clock of every rule that reads the date (the ledger's): a video job's hold expiry and deadline. */
  clock: Clock;
}

/**
 * A trailing slash names the same route as none (`/v1/models/` is `/v1/models`), as clients that join a base URL
 * and a path produce it: Hono drops it before routing, one character compared per request (docs/api.md, "Routes").
 */
const ROUTING = { strict: false } as const;

/**
 * Assembles the HTTP app: the middleware every request passes, one credential check per surface
 * (credential-checks.ts; docs/architecture.md, "Rules"), so no route checks credentials by hand, then every route
 * of the one list (routes.ts).
 */
export function createApp(deps: AppDeps): Hono<AppEnv> {
  const { auth, config } = deps;
  const { server } = config;
  const bodyLimit = server.max_body_bytes;
  // A max_body_bytes set below the small cap lowers it too.
  const bodies: BodyCaps = { small: Math.min(server.small_body_bytes, bodyLimit), large: bodyLimit };
  const app = new Hono<AppEnv>(ROUTING);

  app.use("*", requestContext(deps.logger));
  app.use(
    "*",
    bodyRules({
      budget: deps.requestBodyBudget,
      timeoutMs: server.body_timeout_ms,
      minBytesPerSecond: server.body_min_bytes_per_second,
      graceMs: server.body_min_rate_grace_ms,
      maxJsonDepth: server.max_json_depth,
    }),
  );
  app.use("*", refuseNulInUrl());
  const { exposition } = deps.metrics;
  if (exposition) app.use("*", countRequests(deps.metrics.requests));
  app.onError(handleError);
  app.notFound(notFoundOrMethodNotAllowed(app));

  // Before any route: Hono runs handlers in the order they were added.
  for (const check of CREDENTIAL_CHECKS) app.use(check.path, check.middleware(auth));
  mountRoutes(app, ROUTES, routeDeps(deps, bodies));
  return app;
}

/** The dependencies of every route, from the app's. */
function routeDeps(deps: AppDeps, bodies: BodyCaps): RouteDeps {
  const { config, auth } = deps;
  const { embed } = config.media;
  return {
    config,
    pool: deps.pool,
    logPool: deps.logPool,
    health: deps.health,
    logger: deps.logger,
    catalog: deps.catalog,
    providers: deps.providers,
    metering: deps.metering,
    ledger: deps.ledger,
    clock: deps.clock,
    download: deps.download,
    bodyLimit: config.server.max_body_bytes,
    bodies,
    bodyBudget: deps.bodyBudget,
    // The views are reads: a dead connection is retried, and they wait for the database no longer than a request.
    read: requestRead(config.database.request_timeout_ms, (err) => deps.health.failed(err, "view")),
    sessions: auth.sessions,
    users: auth.users,
    apiKeys: auth.apiKeys,
    embedTokens: auth.embedTokens,
    resellers: deps.resellers,
    resets: deps.resets,
    transfers: deps.transfers,
    mediaCache: createMediaCache(deps.pool, {
      maxBytes: embed.cache_max_bytes,
      ttlSeconds: embed.cache_ttl_seconds,
      claimSeconds: embed.wait_seconds,
    }),
    // GET /metrics (docs/api.md, "Metrics"): here, behind its token, unless it has an address of its own.
    exposition: config.metrics.listen ? null : deps.metrics.exposition,
    metricsToken: config.metrics.token,
    apiDescription,
  };
}

/**
 * The app of `metrics.listen`: GET /metrics alone (a token only if one is configured), with the main app's
 * request ids, access log and error envelope.
 */
export function createMetricsApp(deps: Pick<AppDeps, "config" | "logger">, exposition: Exposition): Hono<AppEnv> {
  const app = new Hono<AppEnv>(ROUTING);
  app.use("*", requestContext(deps.logger));
  app.onError(handleError);
  app.notFound(notFoundOrMethodNotAllowed(app));
  mountRoutes(app, [metricsRoute], { exposition, metricsToken: deps.config.metrics.token });
  return app;
}
