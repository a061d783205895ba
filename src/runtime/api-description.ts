import { readFileSync } from "node:fs";
import path from "node:path";
import { Hono } from "hono";
import { z } from "zod";
import { resellerOperations } from "../account/reseller-routes.js";
import { userQuotaOperations } from "../account/quota-route.js";
import { reserveResetOperations } from "../account/reserve-reset-routes.js";
import { transferOperations } from "../transfers/transfer-routes.js";
import { userRequestOperations } from "../analytics/user-requests-route.js";
import { authOperations } from "../auth/auth-routes.js";
import { inferenceOperations } from "../inference/operations.js";
import { mediaOperations } from "../media/operations.js";
import { videoOperations } from "../media/video-operations.js";
import { packageRoot } from "../package-root.js";
import { ours, type OperationDescription } from "../server/api-description.js";
import { supportIncidentOperations } from "../support/incidents/incident-routes.js";
import { supportStaffOperations } from "../support/staff/staff-routes.js";
import { supportUserOperations } from "../support/cases/user-routes.js";
import type { AppEnv } from "../server/context.js";
import { healthOperations } from "../server/health.js";
import { indexOperations } from "../server/index-route.js";
import { metricsOperations } from "../server/metrics-route.js";
import { buildOpenApiDocument } from "../server/openapi-document.js";
import { supportWorkerOperations } from "../support/worker/worker-operations.js";
import { embedOpenApiSchemas, protoJsonSchemas, type ProtoExtract } from "../server/openapi-vendor.js";

// The API description: every route folder's operations, with the vendors' schemas from vendor-schemas/. Served
// at GET /openapi.json and printed by `gateway openapi`; the same document either way (it does not depend on the
// config). test/integration/api-description.test.ts fails when a served route is not described, or the reverse.

const TAGS = [
  { name: "Inference", description: "The OpenAI, Anthropic and Gemini wire shapes, metered against quota." },
  { name: "Evaluation", description: "The evaluation service." },
  { name: "Media", description: "Images, video jobs and embeddable images, metered against quota." },
  { name: "Auth", description: "Sessions for the user and admin endpoints." },
  { name: "Account", description: "A user's own quota, request log and balances (session)." },
  { name: "Support", description: "Support cases about a user's own requests (session; the caller owns the case)." },
  { name: "Support staff", description: "The support workspace's staff side (admin session; CSRF on every POST)." },
  { name: "Admin", description: "Users, API keys and balances (admin session; CSRF token on state changes)." },
  { name: "Internal", description: "Endpoints of the support workers (bot token)." },
  { name: "Operations", description: "Probes, metrics and the API description." },
] as const;

const documentSchema = z.looseObject({
  openapi: z.literal("3.1.0"),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});

const describeDescription: OperationDescription = {
  method: "get",
  path: "/openapi.json",
  operationId: "getApiDescription",
  summary: "This document: the OpenAPI 3.1 description of the gateway's API",
  tag: "Operations",
  access: "public",
  ok: { status: 200, description: "The description.", schema: ours("OpenApiDocument", documentSchema) },
};

export function apiOperations(): OperationDescription[] {
  return [
    ...indexOperations,
    ...healthOperations,
    describeDescription,
    ...metricsOperations,
    ...inferenceOperations,
    ...mediaOperations,
    ...videoOperations,
    ...authOperations,
    ...userRequestOperations,
    ...userQuotaOperations,
    ...resellerOperations,
    ...reserveResetOperations,
    ...transferOperations,
    ...supportUserOperations,
    ...supportStaffOperations,
    ...supportIncidentOperations,
    ...supportWorkerOperations,
  ];
}

// The Gemini messages the generate-content routes speak; the rest of the copied protos is not embedded.
const GEMINI_ROOTS = ["GenerateContentRequest", "GenerateContentResponse"];

function vendorSchemas(): Record<string, unknown> {
  const read = (file: string) => JSON.parse(readFileSync(path.join(packageRoot, "vendor-schemas", file), "utf8")) as unknown;
  const openai = read("openai-schemas.json") as { schemas: Record<string, unknown> };
  const anthropic = read("anthropic-schemas.json") as { schemas: Record<string, unknown> };
  return Object.assign(
    embedOpenApiSchemas("openai", openai.schemas),
    embedOpenApiSchemas("anthropic", anthropic.schemas),
    protoJsonSchemas(read("gemini-proto.json") as ProtoExtract, GEMINI_ROOTS),
  );
}

/** The OpenAPI 3.1 document, built from the operations and the vendors' schemas. */
export function apiDescription(): Record<string, unknown> {
  return buildOpenApiDocument({ operations: apiOperations(), vendorSchemas: vendorSchemas(), tags: TAGS });
}

/** GET /openapi.json, built on the first request (about half a megabyte) and kept. */
export function apiDescriptionRoutes() {
  let text: string | undefined;
  return new Hono<AppEnv>().get("/openapi.json", (c) => {
    text ??= JSON.stringify(apiDescription());
    c.header("Content-Type", "application/json; charset=utf-8");
    return c.body(text);
  });
}
