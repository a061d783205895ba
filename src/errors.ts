// The one error type that crosses module boundaries, and the one table of the gateway's error codes. Routes and
// services throw GatewayError with a code; the server's error handler turns it into the envelope (docs/architecture.md, "Rules");
// the request log and the metrics read the same code and its class. Pure: no I/O, no framework imports.

export const ERROR_TYPES = [
  "invalid_request_error",
  "authentication_error",
  "permission_error",
  "conflict_error",
  "rate_limit_error",
  "api_error",
  "overloaded_error",
] as const;

export type ErrorType = (typeof ERROR_TYPES)[number];

/** Coarse classes of failures, for the request log and metrics: never upstream text. */
export const ERROR_CLASSES = [
  "invalid_request",
  "authentication",
  "permission",
  "not_found",
  "quota_exceeded",
  "rate_limited",
  "context_limit",
  "upstream_error",
  "upstream_timeout",
  "upstream_unreachable",
  "client_cancelled",
  "unavailable",
  "internal",
] as const;

export type ErrorClass = (typeof ERROR_CLASSES)[number];

export interface ErrorCodeSpec {
  /** The status a client gets (a route may word it otherwise: the evaluation service answers its 400s as 422). */
  status: number;
  type: ErrorType;
  class: ErrorClass;
}

const invalid = (status = 400): ErrorCodeSpec => ({ status, type: "invalid_request_error", class: "invalid_request" });
const denied: ErrorCodeSpec = { status: 403, type: "permission_error", class: "permission" };
const missing: ErrorCodeSpec = { status: 404, type: "invalid_request_error", class: "not_found" };
const upstream = (status: number, type: ErrorType = "api_error"): ErrorCodeSpec => ({ status, type, class: "upstream_error" });

/** Every code the gateway answers with; docs/api.md lists them with their meaning. */
export const ERROR_CODES = {
  invalid_request: invalid(),
  invalid_value: invalid(),
  invalid_json: invalid(),
  invalid_cursor: invalid(),
  // A staff-side id prefix that names several cases or incidents (docs/support.md, "Ids").
  ambiguous_id: invalid(),
  invalid_upstream_key: invalid(),
  model_not_supported: invalid(),
  upstream_key_not_accepted: invalid(),
  upstream_key_rejected: invalid(),
  context_length_exceeded: { status: 400, type: "invalid_request_error", class: "context_limit" },
  // The provider's safety system refused the prompt or its image (docs/api.md, "Images"): nothing generated or charged.
  content_policy_violation: invalid(),
  invalid_api_key: { status: 401, type: "authentication_error", class: "authentication" },
  invalid_session: { status: 401, type: "authentication_error", class: "authentication" },
  // A login whose email and password do not match (the same answer for an unknown email: guessing learns nothing).
  invalid_credentials: { status: 401, type: "authentication_error", class: "authentication" },
  permission_denied: denied,
  admin_required: denied,
  account_disabled: denied,
  csrf_failed: denied,
  model_not_allowed: denied,
  model_not_priced: denied,
  plan_missing: denied,
  not_found: missing,
  unknown_route: missing,
  route_removed: missing,
  model_not_found: missing,
  user_not_found: missing,
  key_not_found: missing,
  job_not_found: missing,
  // A completed video job's file, which the provider no longer keeps (docs/api.md, "Video").
  video_expired: { status: 410, type: "invalid_request_error", class: "not_found" },
  method_not_allowed: invalid(405),
  conflict: { status: 409, type: "conflict_error", class: "invalid_request" },
  email_taken: { status: 409, type: "conflict_error", class: "invalid_request" },
  // A support worker's lease token is not the job's current lease, or its lease has ended (docs/support.md).
  lease_lost: { status: 409, type: "conflict_error", class: "invalid_request" },
  lease_expired: { status: 409, type: "conflict_error", class: "invalid_request" },
  // A staff reopen of a case that is not resolved (docs/support.md, "Staff").
  case_not_resolved: { status: 409, type: "conflict_error", class: "invalid_request" },
  // POST /api/v1/user/quota-resets/use with nothing spent today: no reset is used (docs/billing.md, "Reserve resets").
  nothing_to_restore: { status: 409, type: "conflict_error", class: "invalid_request" },
  // Token transfers (docs/billing.md, "Token transfers").
  transfers_disabled: denied,
  transfer_limit_exceeded: { status: 409, type: "conflict_error", class: "invalid_request" },
  insufficient_transferable: { status: 409, type: "conflict_error", class: "invalid_request" },
  idempotency_key_reused: invalid(422),
  transfer_rate_limited: { status: 429, type: "rate_limit_error", class: "rate_limited" },
  request_too_large: invalid(413),
  unsupported_media_type: invalid(415),
  token_limit_exceeded: invalid(422),
  insufficient_quota: { status: 429, type: "rate_limit_error", class: "quota_exceeded" },
  insufficient_balance: { status: 429, type: "rate_limit_error", class: "quota_exceeded" },
  login_rate_limited: { status: 429, type: "rate_limit_error", class: "rate_limited" },
  upstream_rate_limited: { status: 429, type: "rate_limit_error", class: "rate_limited" },
  client_closed_request: { status: 499, type: "invalid_request_error", class: "client_cancelled" },
  internal_error: { status: 500, type: "api_error", class: "internal" },
  // A request body that stalled or dripped (docs/security.md, "Connections and request bodies").
  request_timeout: { status: 408, type: "invalid_request_error", class: "invalid_request" },
  body_budget_exhausted: { status: 503, type: "api_error", class: "unavailable" },
  database_unavailable: { status: 503, type: "api_error", class: "unavailable" },
  // The upstream's doing, told by status only (the upstream's own text never leaves the adapter).
  upstream_invalid_request: upstream(400, "invalid_request_error"),
  upstream_request_too_large: upstream(413, "invalid_request_error"),
  upstream_error: upstream(502),
  upstream_invalid_output: upstream(502),
  upstream_answer_too_large: upstream(502),
  upstream_stream_interrupted: upstream(502),
  upstream_unreachable: { status: 502, type: "api_error", class: "upstream_unreachable" },
  upstream_timeout: { status: 504, type: "api_error", class: "upstream_timeout" },
  upstream_overloaded: upstream(529, "overloaded_error"),
} as const satisfies Record<string, ErrorCodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface GatewayErrorInit {
  code: ErrorCode;
  message: string;
  param?: string | null;
  headers?: Record<string, string>;
  /** Another status than the code's (the evaluation service's 422 for what other routes answer 400). */
  status?: number;
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: ErrorCode;
  readonly param: string | null;
  readonly headers: Record<string, string>;

  constructor(init: GatewayErrorInit) {
    super(init.message);
    const spec = ERROR_CODES[init.code];
    this.name = "GatewayError";
    this.status = init.status ?? spec.status;
    this.type = spec.type;
    this.code = init.code;
    this.param = init.param ?? null;
    this.headers = init.headers ?? {};
  }

  get errorClass(): ErrorClass {
    return ERROR_CODES[this.code].class;
  }
}

export const errors = {
  badRequest: (message: string, param: string | null = null, code: ErrorCode = "invalid_request") =>
    new GatewayError({ code, message, param }),
  /** The evaluation service's status for invalid input (spec "Errors"): never a reason to try another provider. */
  unprocessable: (message: string, param: string | null = null, code: ErrorCode = "invalid_request") =>
    new GatewayError({ code, message, param, status: 422 }),
  unauthorized: (message = "Invalid or missing credentials.") => new GatewayError({ code: "invalid_api_key", message }),
  invalidSession: (message = "Invalid or expired session.") => new GatewayError({ code: "invalid_session", message }),
  invalidCredentials: () => new GatewayError({ code: "invalid_credentials", message: "Invalid email or password." }),
  forbidden: (message: string, code: ErrorCode = "permission_denied") => new GatewayError({ code, message }),
  notFound: (message: string, code: ErrorCode = "not_found") => new GatewayError({ code, message }),
  methodNotAllowed: (method: string, path: string, allow: string[]) =>
    new GatewayError({
      code: "method_not_allowed",
      message: `Method ${method} is not allowed on ${path}; allowed: ${allow.join(", ")}.`,
      headers: { Allow: allow.join(", ") },
    }),
  conflict: (message: string, code: ErrorCode = "conflict") => new GatewayError({ code, message }),
  payloadTooLarge: (limitBytes: number) =>
    new GatewayError({ code: "request_too_large", message: `Request body exceeds the limit of ${limitBytes} bytes.` }),
  unsupportedMediaType: (message: string) => new GatewayError({ code: "unsupported_media_type", message }),
  /** The client went away mid-request; nobody reads the answer, but the log row says what happened. */
  clientClosed: () => new GatewayError({ code: "client_closed_request", message: "The client closed the request." }),
  internal: (message = "The gateway hit an internal error. Retry later; cite the request id if it persists.") =>
    new GatewayError({ code: "internal_error", message }),
};
