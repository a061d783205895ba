import { readFileSync } from "node:fs";
import path from "node:path";
import { packageRoot } from "../package-root.js";
import { buildOpenApiDocument } from "./document.js";
import type { OperationDescription } from "./operation.js";
import { embedOpenApiSchemas, protoJsonSchemas, type ProtoExtract } from "./vendor-schemas.js";

// The gateway's API description: the operations of every route, with the vendors' schemas from vendor-schemas/.
// Served at GET /openapi.json and printed by `gateway openapi`; the same document either way (it does not depend
// on the config).

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

/** The OpenAPI 3.1 document of these operations, with the vendors' schemas they refer to. */
export function describeApi(operations: OperationDescription[]): Record<string, unknown> {
  return buildOpenApiDocument({ operations, vendorSchemas: vendorSchemas(), tags: TAGS });
}
