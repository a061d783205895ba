import { Hono } from "hono";
import type { Logger } from "pino";
import type { AuthServices } from "../auth/types.js";
import { adminAuth, apiKeyAuth, botAuth, embedAuth, sessionAuth } from "../auth/middleware.js";
import { adminRoutes, authRoutes, internalRoutes, userRoutes } from "../auth/auth-routes.js";
import type { Catalog } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import { requestRead } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import { userRequestRoutes } from "../analytics/user-requests-route.js";
import { chatRoutes } from "../inference/chat-route.js";
import { embeddingsRoutes } from "../inference/embeddings-route.js";
import { generateContentRoutes } from "../inference/generate-content-route.js";
import { messagesRoutes } from "../inference/messages-route.js";
import { responsesRoutes } from "../inference/responses-route.js";
import { systemoneRoutes } from "../inference/systemone-route.js";
import { modelListRoutes, nativeModelListRoutes } from "../inference/models-route.js";
import { geminiModelRoutes } from "../inference/gemini-models-route.js";
import { embedRoutes } from "../media/embed-route.js";
import { embedTokenRoutes } from "../media/embed-token-route.js";
import { imageRoutes } from "../media/image-routes.js";
import { videoRoutes } from "../media/video-routes.js";
import { createMediaCache } from "../media/media-cache.js";
import type { Metering } from "../metering/meter.js";
import type { Exposition, Metrics } from "../metrics/recorders.js";
import type { Providers } from "../providers/registry.js";
import type { SafeDownloader } from "../providers/safe-download.js";
import { userQuotaRoutes } from "../account/quota-route.js";
import type { ResellerAccounts } from "../account/reseller-accounts.js";
import { resellerAdminRoutes, resellerUserRoutes } from "../account/reseller-routes.js";
import { reserveResetAdminRoutes, reserveResetUserRoutes } from "../account/reserve-reset-routes.js";
import type { ReserveResets } from "../account/reserve-resets.js";
import type { Transfers } from "../transfers/transfers.js";
import { transferAdminRoutes, transferUserRoutes } from "../transfers/transfer-routes.js";
import type { Clock } from "../time/clock.js";
import type { QuotaLedger } from "../quota/types.js";
import { supportIncidentRoutes } from "../support/incidents/incident-routes.js";
import { supportStaffRoutes } from "../support/staff/staff-routes.js";
import { supportUserRoutes } from "../support/cases/user-routes.js";
import type { BodyBudget } from "../server/body-budget.js";
import { bodyRules } from "../server/body.js";
import type { BodyCaps } from "../server/body-rules.js";
import type { AppEnv } from "../server/context.js";
import { handleError } from "../server/error-envelope.js";
import { healthRoutes } from "../server/health.js";
import { indexRoutes } from "../server/index-route.js";
import { supportWorkerRoutes } from "../support/worker/worker-routes.js";
import { metricsRoutes } from "../server/metrics-route.js";
import { notFoundOrMethodNotAllowed } from "../server/not-found.js";
import { requestContext } from "../server/request-context.js";
import { apiDescriptionRoutes } from "./api-description.js";
import { countRequests } from "../server/request-metrics.js";
import { refuseNulInUrl } from "../server/url-text.js";

export interface AppDeps {
  config: Config;
  pool: Pool;
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
 * Assembles the HTTP app. One auth middleware per surface (docs/architecture.md, "Rules"), mounted here and nowhere else, so no
 * route checks credentials by hand.
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

  app.route("/", indexRoutes());
  app.route("/", healthRoutes(deps.pool, deps.health));
  app.route("/", apiDescriptionRoutes());

  app.use("/v1/*", apiKeyAuth(auth.keyAuth));
  app.use("/native/*", apiKeyAuth(auth.keyAuth));
  // The routes of the Anthropic and Gemini SDKs outside /v1 (docs/architecture.md, "Rules").
  app.use("/messages", apiKeyAuth(auth.keyAuth));
  app.use("/compatible/*", apiKeyAuth(auth.keyAuth, { queryKey: true }));
  // Images for `<img src>`: an embed token in the query, or a key in the headers (docs/api.md, "Embeddable images").
  app.use("/embed/*", embedAuth(auth.keyAuth, auth.embedTokens));
  app.use("/api/v1/user/*", sessionAuth(auth.sessions));
  app.use("/api/v1/admin/*", adminAuth(auth.sessions));
  // The support workspace's staff side (docs/support.md): admins, with CSRF on every state change.
  app.use("/api/v1/assistant/*", adminAuth(auth.sessions));
  app.use("/api/v1/internal/*", botAuth(auth.botToken));

  app.route("/v1", modelListRoutes(deps.catalog, config));
  const inference = {
    config,
    catalog: deps.catalog,
    providers: deps.providers,
    metering: deps.metering,
    download: deps.download,
    bodyLimit,
  };
  app.route("/v1", chatRoutes(inference));
  app.route("/v1", embeddingsRoutes(inference));
  app.route("/v1", responsesRoutes(inference));
  app.route("/v1", imageRoutes(inference));
  app.route("/v1", embedTokenRoutes({ config, catalog: deps.catalog, tokens: auth.embedTokens, bodies }));
  const { embed } = config.media;
  const cache = createMediaCache(deps.pool, {
    maxBytes: embed.cache_max_bytes,
    ttlSeconds: embed.cache_ttl_seconds,
    claimSeconds: embed.wait_seconds,
  });
  app.route("/", embedRoutes(Object.assign({ cache }, inference)));
  // One handler at both addresses: the Anthropic SDK appends /v1/messages to its base URL.
  const messages = messagesRoutes(inference);
  app.route("/", messages);
  app.route("/v1", messages);
  app.route("/compatible", generateContentRoutes(inference));
  app.route("/compatible", geminiModelRoutes(deps.catalog, config));
  app.route("/native", nativeModelListRoutes(deps.catalog, config));
  app.route("/", systemoneRoutes(inference, deps.bodyBudget));
  const { catalog, providers, metering, ledger, pool, clock, download } = deps;
  const onFault = (err: unknown) => deps.health.failed(err, "video submission");
  app.route(
    "/v1",
    videoRoutes({ config, catalog, providers, metering, ledger, pool, clock, download, bodyLimit, logger: deps.logger, onFault }),
  );
  // The views are reads: a dead connection is retried, and they wait for the database no longer than a request.
  const read = requestRead(config.database.request_timeout_ms, (err) => deps.health.failed(err, "view"));
  app.route("/api/v1/auth", authRoutes({ sessions: auth.sessions, config, bodies }));
  app.route("/api/v1/user", userRoutes());
  app.route("/api/v1/user", userRequestRoutes({ pool: deps.pool, read }));
  app.route("/api/v1/user", userQuotaRoutes({ ledger: deps.ledger, config, read }));
  app.route("/api/v1/user", resellerUserRoutes({ accounts: deps.resellers, read }));
  app.route("/api/v1/user", reserveResetUserRoutes({ resets: deps.resets, bodies, read }));
  app.route("/api/v1/user", transferUserRoutes({ transfers: deps.transfers, bodies, read }));
  app.route("/api/v1/user/assistant", supportUserRoutes({ pool: deps.pool, read, bodies }));
  app.route("/api/v1/assistant", supportStaffRoutes({ pool: deps.pool, read, bodies }));
  app.route("/api/v1/assistant", supportIncidentRoutes({ pool: deps.pool, read, bodies }));
  app.route("/api/v1/admin", adminRoutes({ users: auth.users, apiKeys: auth.apiKeys, bodies, read }));
  app.route("/api/v1/admin", resellerAdminRoutes({ accounts: deps.resellers, bodies, read }));
  app.route("/api/v1/admin", reserveResetAdminRoutes({ resets: deps.resets, bodies, read }));
  app.route("/api/v1/admin", transferAdminRoutes({ transfers: deps.transfers, bodies, read }));
  app.route("/api/v1/internal", internalRoutes());
  app.route("/api/v1/internal/support/assistant", supportWorkerRoutes({ pool: deps.pool, bodies }));
  // GET /metrics (docs/api.md, "Metrics"): here, behind its token, unless it has an address of its own.
  if (exposition && !config.metrics.listen) app.route("/", metricsRoutes(exposition, config.metrics.token));

  return app;
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
  app.route("/", metricsRoutes(exposition, deps.config.metrics.token));
  return app;
}
