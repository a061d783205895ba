import type { z } from "zod";
import type { ErrorCode } from "../errors.js";

// What a route folder says about its routes for the API description (GET /openapi.json): each folder exports its
// operations beside the routes that serve them, with the very zod schemas that validate the requests and type
// the answers, so the description cannot drift from the code (src/openapi/document.ts assembles them).

/**
 * Who may call an operation. `apiKey`: an inference or reseller key, in whichever header the client's SDK uses;
 * `session`: a logged-in user; `admin`: an admin session (and its CSRF token on state changes); `bot`: the
 * support bot token; `metrics`: the metrics token.
 */
export type Access = "public" | "apiKey" | "session" | "admin" | "bot" | "metrics";

export type Vendor = "openai" | "anthropic" | "gemini";

/**
 * A schema of ours, generated from zod under `name`; or a vendor's, embedded from `vendor-schemas/`; or, under
 * `name`, any one of several (one path answering in several vendors' shapes, chosen by a request header).
 */
export type SchemaRef = { name: string; zod: z.ZodType } | { vendor: Vendor; name: string } | { name: string; anyOf: SchemaRef[] };

export const ours = (name: string, zod: z.ZodType): SchemaRef => ({ name, zod });

export const vendor = (of: Vendor, name: string): SchemaRef => ({ vendor: of, name });

export const anyOf = (name: string, ...schemas: SchemaRef[]): SchemaRef => ({ name, anyOf: schemas });

export interface SuccessDescription {
  status: number;
  description: string;
  /** The JSON body; none for a body of another type (`contentType`). */
  schema?: SchemaRef;
  /** Another content type than JSON, described by `description` (`text/plain` for metrics). */
  contentType?: string;
  /** With `stream: true` the answer is server-sent events, each `data:` line one of these. */
  events?: SchemaRef;
  /** The answer names its committed charge (`x-gateway-charge`, docs/api.md "Charges"): a billed route's. */
  charged?: boolean;
}

export interface OperationDescription {
  method: "get" | "post" | "put" | "patch" | "delete";
  /** The OpenAPI path template: `/api/v1/admin/keys/{id}/revoke`. */
  path: string;
  /** The Hono pattern serving it, when the template cannot say it (a model ID and a method in one segment). */
  served?: string;
  /** What a path parameter matches where it is more than one plain segment: `{ model: ".+" }` for IDs with slashes. */
  paramPatterns?: Record<string, string>;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  access: Access;
  pathParams?: Record<string, string>;
  /** Optional request headers the route reads: name → description. */
  headers?: Record<string, string>;
  /** The query string, as the zod object that validates it. */
  query?: z.ZodObject;
  /** The JSON request body. */
  body?: SchemaRef;
  /** The same request as `multipart/form-data`, when the route takes that form too (image edits). */
  form?: SchemaRef;
  /** The success answer; none for a removed route. */
  ok?: SuccessDescription;
  /** Other answers that are not errors (the readiness probe's 503). */
  otherResponses?: SuccessDescription[];
  /** The errors the route itself answers; those of its access and its body are added (openapi-document.ts). */
  errors?: readonly ErrorCode[];
  /** The status of an error code on this route when it is not the code's own (the evaluation service's 422). */
  statusOf?: (code: ErrorCode) => number;
  deprecated?: boolean;
}
