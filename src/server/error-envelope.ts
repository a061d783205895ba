import type { Context } from "hono";
import { z } from "zod";
import { answeredAs } from "../db/faults.js";
import { ERROR_CODES, ERROR_TYPES, GatewayError, errors, type ErrorCode } from "../errors.js";
import type { AppEnv } from "./context.js";
import { requestLog } from "./request-context.js";

/** The gateway error envelope (docs/architecture.md, "Rules"), the same on every route; it also matches OpenAI's `ErrorResponse`. */
export const errorEnvelopeSchema = z.object({
  error: z.object({
    message: z.string().meta({ description: "What went wrong and what to do, in English; never upstream text." }),
    type: z.enum(ERROR_TYPES),
    code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]).meta({ description: "The gateway's error code (docs/api.md)." }),
    param: z.string().nullable().meta({ description: "The request field at fault, as `messages[0].role`; null when none is." }),
    request_id: z.string().nullable().meta({ description: "The X-Request-Id of the request: cite it in a support case." }),
  }),
});

function errorBody(err: GatewayError, requestId: string | null): z.infer<typeof errorEnvelopeSchema> {
  return {
    error: { message: err.message, type: err.type, code: err.code, param: err.param, request_id: requestId },
  };
}

export function errorResponse(c: Context<AppEnv>, err: GatewayError): Response {
  // Headers go in with the body: @hono/node-server may write a response from its construction arguments, so
  // headers set on it afterwards can be lost.
  return c.json(errorBody(err, c.get("requestId") ?? null), err.status as 400, err.headers);
}

/**
 * app.onError: typed errors map to their status; a database that did not answer (a dead connection, an outage)
 * is 503 database_unavailable with Retry-After, never a 500; anything else is logged and becomes a bare 500.
 */
export function handleError(err: Error, c: Context<AppEnv>): Response {
  const answered = answeredAs(err);
  if (answered instanceof GatewayError) return errorResponse(c, answered);
  requestLog(c)?.error({ err }, "unhandled error");
  return errorResponse(c, errors.internal());
}
