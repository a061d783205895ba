import type { Context } from "hono";
import type { z } from "zod";
import { answeredAs } from "../db/faults.js";
import { GatewayError, errors } from "../errors.js";
import { errorEnvelopeSchema } from "../openapi/error-envelope-schema.js";
import type { AppEnv } from "./context.js";
import { requestLog } from "./request-context.js";

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
