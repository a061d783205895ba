// The one error type that crosses module boundaries. Routes and services throw it; the server's error
// handler turns it into the gateway envelope (DESIGN.md §5). Pure: no I/O, no framework imports.

export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "conflict_error"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error";

export interface GatewayErrorInit {
  status: number;
  type: ErrorType;
  message: string;
  code?: string | null;
  param?: string | null;
  headers?: Record<string, string>;
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string | null;
  readonly param: string | null;
  readonly headers: Record<string, string>;

  constructor(init: GatewayErrorInit) {
    super(init.message);
    this.name = "GatewayError";
    this.status = init.status;
    this.type = init.type;
    this.code = init.code ?? null;
    this.param = init.param ?? null;
    this.headers = init.headers ?? {};
  }
}

export const errors = {
  badRequest: (message: string, param: string | null = null, code: string | null = null) =>
    new GatewayError({ status: 400, type: "invalid_request_error", message, param, code }),
  /** The evaluation service's status for invalid input (spec "Errors"): never a reason to try another provider. */
  unprocessable: (message: string, param: string | null = null, code: string | null = null) =>
    new GatewayError({ status: 422, type: "invalid_request_error", message, param, code }),
  unauthorized: (message = "Invalid or missing credentials.") =>
    new GatewayError({ status: 401, type: "authentication_error", message, code: "invalid_api_key" }),
  invalidSession: (message = "Invalid or expired session.") =>
    new GatewayError({ status: 401, type: "authentication_error", message, code: "invalid_session" }),
  forbidden: (message: string, code = "permission_denied") =>
    new GatewayError({ status: 403, type: "permission_error", message, code }),
  notFound: (message: string, code = "not_found") =>
    new GatewayError({ status: 404, type: "invalid_request_error", message, code }),
  methodNotAllowed: (method: string, path: string, allow: string[]) =>
    new GatewayError({
      status: 405,
      type: "invalid_request_error",
      message: `Method ${method} is not allowed on ${path}; allowed: ${allow.join(", ")}.`,
      code: "method_not_allowed",
      headers: { Allow: allow.join(", ") },
    }),
  conflict: (message: string, code = "conflict") =>
    new GatewayError({ status: 409, type: "conflict_error", message, code }),
  payloadTooLarge: (limitBytes: number) =>
    new GatewayError({
      status: 413,
      type: "invalid_request_error",
      message: `Request body exceeds the limit of ${limitBytes} bytes.`,
      code: "request_too_large",
    }),
  unsupportedMediaType: (message: string) =>
    new GatewayError({ status: 415, type: "invalid_request_error", message, code: "unsupported_media_type" }),
  /** The client went away mid-request; nobody reads the answer, but the log row says what happened. */
  clientClosed: () =>
    new GatewayError({ status: 499, type: "invalid_request_error", message: "The client closed the request.", code: "client_closed_request" }),
  internal: (message = "The gateway hit an internal error. Retry later; cite the request id if it persists.") =>
    new GatewayError({ status: 500, type: "api_error", message, code: "internal_error" }),
  unavailable: (message: string) =>
    new GatewayError({ status: 503, type: "api_error", message, code: "unavailable" }),
};
