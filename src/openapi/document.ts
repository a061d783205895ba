import type { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "../errors.js";
import { jsonSchemaOf } from "./json-schema.js";
import { ours, type Access, type OperationDescription, type SchemaRef, type SuccessDescription } from "./operation.js";
import { errorEnvelopeSchema } from "./error-envelope-schema.js";

// Assembles the OpenAPI 3.1 document from the operations the routes describe (src/runtime/routes.ts). Our
// schemas come from zod 4's own JSON Schema output (2020-12, the dialect of OpenAPI 3.1); a vendor's wire shapes
// are the vendor's own schemas, embedded under `<vendor>.<Name>`. docs/api.md, "API description".

export const API_VERSION = "1.0.0";

type Json = Record<string, unknown>;

const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const SECURITY_SCHEMES = {
  apiKey: { type: "http", scheme: "bearer", description: "An inference or reseller API key: `Authorization: Bearer gw_…`." },
  anthropicApiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "The API key in the Anthropic SDK's header." },
  googleApiKey: { type: "apiKey", in: "header", name: "x-goog-api-key", description: "The API key in the Gemini SDK's header." },
  sessionBearer: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "The `token` of POST /api/v1/auth/login." },
  sessionCookie: { type: "apiKey", in: "cookie", name: "gw_session", description: "The session cookie set by login." },
  csrfToken: {
    type: "apiKey",
    in: "header",
    name: "X-CSRF-Token",
    description: "The `csrf_token` of login; required with an admin session on POST, PUT, PATCH and DELETE.",
  },
  botToken: { type: "http", scheme: "bearer", description: "SUPPORT_BOT_TOKEN, for the support workers' internal endpoints." },
  metricsToken: { type: "http", scheme: "bearer", description: "`metrics.token` of the config, for GET /metrics." },
} as const;

const STATE_CHANGING = new Set(["post", "put", "patch", "delete"]);

function security(access: Access, method: string): Json[] {
  switch (access) {
    case "public":
      return [];
    case "apiKey":
      return [{ apiKey: [] }, { anthropicApiKey: [] }, { googleApiKey: [] }];
    case "session":
      return [{ sessionBearer: [] }, { sessionCookie: [] }];
    case "admin":
      return STATE_CHANGING.has(method)
        ? [
            { sessionBearer: [], csrfToken: [] },
            { sessionCookie: [], csrfToken: [] },
          ]
        : [{ sessionBearer: [] }, { sessionCookie: [] }];
    case "bot":
      return [{ botToken: [] }];
    case "metrics":
      return [{ metricsToken: [] }];
  }
}

/** The errors an operation can answer whatever its route does: those of its credential, its body, its query. */
function impliedErrors(op: OperationDescription): ErrorCode[] {
  const codes: ErrorCode[] = ["internal_error"];
  if (op.access === "apiKey" || op.access === "bot" || op.access === "metrics") codes.push("invalid_api_key");
  if (op.access === "session" || op.access === "admin") codes.push("invalid_session");
  if (op.access === "admin") codes.push("admin_required");
  if (op.access === "admin" && STATE_CHANGING.has(op.method)) codes.push("csrf_failed");
  // Credentials are looked up in the database (through caches), so any authenticated call can meet an outage.
  if (op.access !== "public" && op.access !== "metrics") codes.push("database_unavailable");
  if (op.body) codes.push("invalid_json", "invalid_value", "unsupported_media_type", "request_too_large");
  if (op.query) codes.push("invalid_value");
  return codes;
}

const RETRY_AFTER_STATUSES = new Set([429, 503, 529]);

/** Builds the document's components and paths; one instance per document, so schema names are checked once. */
class DocumentBuilder {
  readonly schemas: Record<string, unknown> = {};
  private readonly zodNames = new Map<string, z.ZodType>();

  constructor(private readonly vendorSchemas: Record<string, unknown>) {}

  /** A `$ref` to the schema, registering ours under its name (one zod schema per name). */
  ref(source: SchemaRef, io: "input" | "output"): Json {
    if ("vendor" in source) {
      const name = `${source.vendor}.${source.name}`;
      if (!(name in this.vendorSchemas)) throw new Error(`vendor-schemas holds no ${name}: add it to the extract script's roots`);
      return schemaRef(name);
    }
    if ("anyOf" in source) {
      this.schemas[source.name] ??= { anyOf: source.anyOf.map((one) => this.ref(one, io)) };
      return schemaRef(source.name);
    }
    const known = this.zodNames.get(source.name);
    if (known && known !== source.zod) throw new Error(`two schemas are named ${source.name}`);
    if (!known) {
      this.zodNames.set(source.name, source.zod);
      this.schemas[source.name] = jsonSchemaOf(source.zod, io);
    }
    return schemaRef(source.name);
  }

  operation(op: OperationDescription): Json {
    const operation: Json = { operationId: op.operationId, summary: op.summary, tags: [op.tag], security: security(op.access, op.method) };
    if (op.description) operation.description = op.description;
    const parameters = [...this.pathParameters(op), ...this.queryParameters(op), ...this.headerParameters(op)];
    if (parameters.length > 0) operation.parameters = parameters;
    if (op.body) {
      const content: Json = { "application/json": { schema: this.ref(op.body, "input") } };
      if (op.form) content["multipart/form-data"] = { schema: this.ref(op.form, "input") };
      operation.requestBody = { required: true, content };
    }
    const responses: Json = {};
    for (const success of [...(op.ok ? [op.ok] : []), ...(op.otherResponses ?? [])])
      responses[String(success.status)] = this.success(success);
    Object.assign(responses, this.errorResponses(op));
    operation.responses = responses;
    if (op.deprecated) operation.deprecated = true;
    if (op.served) operation["x-route"] = op.served;
    return operation;
  }

  private pathParameters(op: OperationDescription): Json[] {
    return Object.entries(op.pathParams ?? {}).map(([name, description]) => ({
      name,
      in: "path",
      required: true,
      description,
      schema: { type: "string" },
    }));
  }

  private headerParameters(op: OperationDescription): Json[] {
    return Object.entries(op.headers ?? {}).map(([name, description]) => ({ name, in: "header", description, schema: { type: "string" } }));
  }

  private queryParameters(op: OperationDescription): Json[] {
    if (!op.query) return [];
    const object = jsonSchemaOf(op.query, "input") as { properties?: Record<string, Json>; required?: string[] };
    return Object.entries(object.properties ?? {}).map(([name, schema]) => {
      const parameter: Json = { name, in: "query", required: object.required?.includes(name) ?? false, schema };
      if (typeof schema.description === "string") parameter.description = schema.description;
      return parameter;
    });
  }

  private success(success: SuccessDescription): Json {
    const content: Json = {};
    if (success.schema) content["application/json"] = { schema: this.ref(success.schema, "output") };
    if (success.contentType) content[success.contentType] = { schema: { type: "string" } };
    if (success.events) {
      content["text/event-stream"] = {
        schema: { type: "string", description: "Server-sent events (with `stream: true`): every `data:` line is one event object." },
        "x-event-schema": this.ref(success.events, "output"),
      };
    }
    const headers: Json = { "X-Request-Id": { $ref: "#/components/headers/RequestId" } };
    if (success.charged) {
      headers["X-Gateway-Charge"] = { $ref: "#/components/headers/GatewayCharge" };
      headers["X-Gateway-Charge-Usd"] = { $ref: "#/components/headers/GatewayChargeUsd" };
    }
    const response: Json = { description: success.description, headers };
    if (Object.keys(content).length > 0) response.content = content;
    return response;
  }

  /** One response per status, naming the error codes that answer it. */
  private errorResponses(op: OperationDescription): Json {
    const byStatus = new Map<number, Set<ErrorCode>>();
    for (const code of [...impliedErrors(op), ...(op.errors ?? [])]) {
      const status = op.statusOf?.(code) ?? ERROR_CODES[code].status;
      byStatus.set(status, (byStatus.get(status) ?? new Set()).add(code));
    }
    const responses: Json = {};
    for (const status of [...byStatus.keys()].sort((a, b) => a - b)) {
      const codes = [...byStatus.get(status)!].sort();
      const headers: Json = { "X-Request-Id": { $ref: "#/components/headers/RequestId" } };
      if (RETRY_AFTER_STATUSES.has(status)) headers["Retry-After"] = { $ref: "#/components/headers/RetryAfter" };
      responses[String(status)] = {
        description: `Error codes: ${codes.map((c) => `\`${c}\``).join(", ")}.`,
        headers,
        content: { "application/json": { schema: schemaRef("ErrorResponse") } },
      };
    }
    return responses;
  }
}

export interface DocumentInput {
  operations: readonly OperationDescription[];
  /** The vendors' schemas, named `<vendor>.<Name>`, their `$ref`s already pointing at those names. */
  vendorSchemas: Record<string, unknown>;
  tags: readonly { name: string; description: string }[];
}

/** The OpenAPI 3.1 document of the gateway's API. */
export function buildOpenApiDocument(input: DocumentInput): Json {
  const builder = new DocumentBuilder(input.vendorSchemas);
  builder.ref(ours("ErrorResponse", errorEnvelopeSchema), "output");
  const paths: Record<string, Json> = {};
  for (const op of input.operations) {
    const item = (paths[op.path] ??= {});
    if (item[op.method]) throw new Error(`${op.method.toUpperCase()} ${op.path} is described twice`);
    item[op.method] = builder.operation(op);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Model gateway API",
      version: API_VERSION,
      description:
        "A self-hosted gateway in front of model providers: the OpenAI, Anthropic messages and Gemini generateContent wire " +
        "shapes, the evaluation service, and the gateway's own account, admin and support endpoints. Every response carries " +
        "X-Request-Id; every error is the envelope `ErrorResponse`. Wire shapes of a vendor are that vendor's own schemas, " +
        "named `openai.*`, `anthropic.*` and `gemini.*`.",
    },
    servers: [{ url: "/" }],
    tags: input.tags,
    paths,
    components: {
      schemas: Object.assign(builder.schemas, input.vendorSchemas),
      securitySchemes: SECURITY_SCHEMES,
      headers: {
        RequestId: { description: "The request's ID; cite it in a support case.", schema: { type: "string" } },
        RetryAfter: { description: "Seconds to wait before retrying.", schema: { type: "string" } },
        GatewayCharge: {
          description:
            "The quota units this request was charged on the day's allowance, committed before the answer was sent (0 for a request a fixed-quota pack or a USD balance paid). A stream names its charge in its final usage event (`gateway_charge`) or in an SSE comment `: x-gateway-charge=N` before its end.",
          schema: { type: "string", pattern: "^[0-9]+$" },
        },
        GatewayChargeUsd: {
          description: "Reseller keys only: what the request's USD balance paid, exact decimal text (`0` when the allowance paid).",
          schema: { type: "string" },
        },
      },
    },
  };
}
