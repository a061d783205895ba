import type { Context } from "hono";
import type { z } from "zod";

/**
 * What differs between the vendors outside their routes: where the SDK puts the API key, and the shape and
 * type names of an error body. Every error the mock sends (auth, faults, bad input, unknown route) goes through
 * the dialect of the request's path, so a client always gets its own vendor's error shape.
 */
export interface Dialect {
  /** Whether the request carries `key` where this vendor's official SDK sends it. */
  hasKey(c: Context, key: string): boolean;
  /** A missing or wrong key. */
  unauthorized(c: Context): Response;
  /** An error whose type name follows the status; `param`/`code` only exist in OpenAI's shape. */
  error(c: Context, status: number, message: string, detail?: { param?: string | null; code?: string | null }): Response;
  /** The answer to an `x-mock-status` fault. */
  fault(c: Context, status: number, message: string): Response;
}

function bearer(c: Context): string | undefined {
  const header = c.req.header("authorization");
  return header?.startsWith("Bearer ") ? header.slice("Bearer ".length) : undefined;
}

/** OpenAI's error body: all four fields always present (the `Error` schema requires `param` and `code`). */
export function openaiError(
  c: Context,
  status: number,
  message: string,
  opts: { type?: string; code?: string | null; param?: string | null } = {},
): Response {
  const error = { message, type: opts.type ?? "invalid_request_error", param: opts.param ?? null, code: opts.code ?? null };
  return c.json({ error }, status as 400);
}

export const openai: Dialect = {
  hasKey: (c, key) => c.req.header("authorization") === `Bearer ${key}`,
  unauthorized: (c) => openaiError(c, 401, "Incorrect API key provided.", { code: "invalid_api_key" }),
  error: (c, status, message, detail = {}) =>
    openaiError(c, status, message, { ...detail, type: status >= 500 ? "server_error" : "invalid_request_error" }),
  fault: (c, status, message) =>
    openaiError(
      c,
      status,
      message,
      status === 429
        ? { type: "requests", code: "rate_limit_exceeded" }
        : status >= 500
          ? { type: "server_error" }
          : { code: "mock_fault" },
    ),
};

/** The type names of the `ErrorResponse` union in Anthropic's API description. */
const ANTHROPIC_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  429: "rate_limit_error",
  504: "timeout_error",
  529: "overloaded_error",
};

function anthropicError(c: Context, status: number, message: string): Response {
  const type = ANTHROPIC_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
  return c.json({ type: "error", error: { type, message }, request_id: null }, status as 400);
}

export const anthropic: Dialect = {
  // The SDK sends `x-api-key`; a bearer token is what it sends for `authToken`, which the real API also takes.
  hasKey: (c, key) => c.req.header("x-api-key") === key || bearer(c) === key,
  unauthorized: (c) => anthropicError(c, 401, "invalid x-api-key"),
  error: anthropicError,
  fault: anthropicError,
};

/** google.rpc.Code names by the HTTP status Google maps them to. */
const GOOGLE_STATUSES: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "ABORTED",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  501: "NOT_IMPLEMENTED",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

function geminiError(c: Context, status: number, message: string, details?: object[]): Response {
  const name = GOOGLE_STATUSES[status] ?? (status >= 500 ? "UNKNOWN" : "FAILED_PRECONDITION");
  return c.json({ error: { code: status, message, status: name, ...(details ? { details } : {}) } }, status as 400);
}

export const gemini: Dialect = {
  hasKey: (c, key) => c.req.header("x-goog-api-key") === key || c.req.query("key") === key,
  // The real API answers a bad key with 400 INVALID_ARGUMENT; the mock uses 401 like the other vendors (see
  // docs/mock-upstream.md) but keeps Google's ErrorInfo reason, which is what clients match on.
  unauthorized: (c) =>
    geminiError(c, 401, "API key not valid. Please pass a valid API key.", [
      { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" },
    ]),
  error: (c, status, message) => geminiError(c, status, message),
  fault: (c, status, message) => geminiError(c, status, message),
};

/** The vendor whose SDK calls this path: Gemini under `/v1beta/`, Anthropic at `/v1/messages`, else OpenAI. */
export function dialectFor(path: string): Dialect {
  if (path.startsWith("/v1beta/")) return gemini;
  if (path === "/v1/messages" || path.startsWith("/v1/messages/")) return anthropic;
  return openai;
}

/**
 * Reads and validates a JSON body, or returns the 400 to answer: the first issue names the field (`param` in
 * OpenAI's shape, the message for the others).
 */
export async function parseBody<S extends z.ZodType>(c: Context, dialect: Dialect, schema: S): Promise<z.output<S> | Response> {
  const body: unknown = await c.req.json().catch(() => undefined);
  if (body === undefined) {
    return dialect.error(c, 400, "We could not parse the JSON body of your request.", { code: "invalid_json" });
  }
  return checkBody(c, dialect, schema, body);
}

/** Validates a body already read (a multipart form made an object), as parseBody does. */
export function checkBody<S extends z.ZodType>(c: Context, dialect: Dialect, schema: S, body: unknown): z.output<S> | Response {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const param = issue?.path.join(".") || null;
  const where = param ? ` at '${param}'` : "";
  return dialect.error(c, 400, `Invalid request${where}: ${issue?.message ?? "invalid body"}`, { param, code: "invalid_value" });
}
