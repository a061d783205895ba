import { resellerRoutes, type ResellerRouteDeps } from "../balances/reseller-routes.js";
import { quotaRoute, type QuotaRouteDeps } from "../balances/quota-routes.js";
import { reserveResetRoutes, type ReserveResetRouteDeps } from "../balances/reserve-reset-routes.js";
import { userRequestsRoute, type UserRequestRouteDeps } from "../analytics/user-requests-routes.js";
import { authRoutes, type AuthRouteDeps } from "../auth/auth-routes.js";
import { chatRoute } from "../inference/chat-routes.js";
import { embeddingsRoute } from "../inference/embeddings-routes.js";
import { generateContentRoute } from "../inference/generate-content-routes.js";
import { getGeminiModelRoute, listGeminiModelsRoute } from "../inference/gemini-models-routes.js";
import { messagesRoute } from "../inference/messages-routes.js";
import { listModelsRoute, nativeModelsRoute, retrieveModelRoute, type ModelRouteDeps } from "../inference/models-routes.js";
import { responsesRoute } from "../inference/responses-routes.js";
import { evaluationRoutes, removedEvaluateRoute, type EvaluationDeps } from "../inference/systemone-routes.js";
import { embedRoute, type EmbedDeps } from "../media/embed-routes.js";
import { embedTokenRoute, type EmbedTokenRouteDeps } from "../media/embed-token-routes.js";
import { imageEditsRoute, imageGenerationsRoute } from "../media/image-routes.js";
import { videoRoutes, type VideoRouteDeps } from "../media/video-routes.js";
import { describeApi } from "../openapi/api-document.js";
import type { OperationDescription } from "../openapi/operation.js";
import { livenessRoute, readinessRoute, type HealthDeps } from "../server/health-routes.js";
import { indexRoute } from "../server/index-routes.js";
import { metricsRoute, type MetricsRouteDeps } from "../server/metrics-routes.js";
import { openApiRoute, type OpenApiRouteDeps } from "../server/openapi-routes.js";
import type { Route } from "../server/route.js";
import { supportUserRoutes, type SupportUserDeps } from "../support/cases/user-routes.js";
import { supportIncidentRoutes, type SupportIncidentDeps } from "../support/incidents/incident-routes.js";
import { supportStaffRoutes, type SupportStaffDeps } from "../support/staff/staff-routes.js";
import { supportWorkerRoutes, type SupportWorkerDeps } from "../support/worker/worker-routes.js";
import { transferRoutes, type TransferRouteDeps } from "../transfers/transfer-routes.js";

/** What every route together needs: the app builds it once (app.ts) and each route takes its own part. */
export type RouteDeps = HealthDeps &
  OpenApiRouteDeps &
  MetricsRouteDeps &
  ModelRouteDeps &
  EvaluationDeps &
  EmbedDeps &
  EmbedTokenRouteDeps &
  VideoRouteDeps &
  AuthRouteDeps &
  UserRequestRouteDeps &
  QuotaRouteDeps &
  ResellerRouteDeps &
  ReserveResetRouteDeps &
  TransferRouteDeps &
  SupportUserDeps &
  SupportStaffDeps &
  SupportIncidentDeps &
  SupportWorkerDeps;

/**
 * Every route the gateway serves, in the order of the API description: the app mounts these (app.ts) and the
 * description describes these (apiDescription below), so the two cannot differ. Each route file holds its routes,
 * each route its operation beside its handler (docs/architecture.md, "Recipes").
 */
export const ROUTES: readonly Route<RouteDeps>[] = [
  indexRoute,
  livenessRoute,
  readinessRoute,
  openApiRoute,
  metricsRoute,
  listModelsRoute,
  retrieveModelRoute,
  listGeminiModelsRoute,
  getGeminiModelRoute,
  nativeModelsRoute,
  chatRoute,
  embeddingsRoute,
  responsesRoute,
  messagesRoute,
  generateContentRoute,
  ...evaluationRoutes,
  removedEvaluateRoute,
  imageGenerationsRoute,
  imageEditsRoute,
  embedRoute,
  embedTokenRoute,
  ...videoRoutes,
  ...authRoutes,
  userRequestsRoute,
  quotaRoute,
  ...resellerRoutes,
  ...reserveResetRoutes,
  ...transferRoutes,
  ...supportUserRoutes,
  ...supportStaffRoutes,
  ...supportIncidentRoutes,
  ...supportWorkerRoutes,
];

/** Every operation the gateway serves, in the description's order. */
export function apiOperations(): OperationDescription[] {
  return ROUTES.flatMap((r) => r.operations);
}

/** The OpenAPI 3.1 document: served at GET /openapi.json and printed by `gateway openapi`, the same either way. */
export function apiDescription(): Record<string, unknown> {
  return describeApi(apiOperations());
}
