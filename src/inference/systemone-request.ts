import { errors } from "../errors.js";
import { systemOneRequestSchema, type SystemOneRequest } from "../providers/systemone/request-schema.js";
import { validate } from "../server/body.js";
import { applyEdits, findMembers } from "../metering/json-members.js";

// The evaluation request as the route holds it: the checked body, and the client's own JSON text, which is
// what goes upstream (only `model` is replaced), so the state and every question reach the evaluator
// byte for byte: number spellings and integers beyond 2^53 included.

export interface SystemOneCall {
  request: SystemOneRequest;
  /** The request body exactly as the client sent it. */
  text: string;
}

/** The parsed body checked as an evaluation request: a 422 naming the failing field otherwise. */
export function toSystemOneCall(raw: unknown, text: string): SystemOneCall {
  return { request: validate(systemOneRequestSchema, raw, errors.unprocessable), text };
}

/**
 * The client's text with `model` set to the upstream version. A body the scanner declines (a duplicate or
 * escaped top-level key) is parsed again and serialised instead, which keeps its values but not their spelling.
 */
export function upstreamBody(call: SystemOneCall, upstreamModel: string): string {
  const model = findMembers(call.text, ["model"])?.get("model");
  if (model) return applyEdits(call.text, [{ start: model.valueStart, end: model.valueEnd, text: JSON.stringify(upstreamModel) }]);
  const body = JSON.parse(call.text) as Record<string, unknown>;
  body.model = upstreamModel;
  return JSON.stringify(body);
}
