import type { JsonResult, UsageReport } from "../providers/types.js";
import { respondStream, respondText, type PushedBody } from "../server/respond.js";
import { OVERHEAD_HEADER } from "./client.js";
import { applyEdits, findMembers } from "./json-members.js";
import type { Delivery } from "./metered-route.js";

// How every metered route hands its answer over: the public model ID in, the overhead header on, the meter
// settled. A route says only what its answer is.

/**
 * The answer as the client gets it: the upstream's text with the public model ID put in, serialised again only
 * when that edit would be ambiguous.
 */
export function withPublicModel(answer: JsonResult, publicModel: string): string {
  const model = findMembers(answer.raw, ["model"])?.get("model");
  if (model) return applyEdits(answer.raw, [{ start: model.valueStart, end: model.valueEnd, text: JSON.stringify(publicModel) }]);
  answer.body.model = publicModel;
  return JSON.stringify(answer.body);
}

/** Sends a JSON answer and settles it from the upstream's usage, or the local count marked estimated. */
export function deliverJson(delivery: Delivery<unknown>, text: string, usage: UsageReport | null, counted: () => Promise<UsageReport>): Response {
  const { c, meter } = delivery;
  meter.markFirstByte();
  void meter.settle(usage ?? counted(), usage ? "upstream" : "estimated");
  return respondText(c, 200, text, { "content-type": "application/json", [OVERHEAD_HEADER]: meter.overheadMs().toFixed(3) });
}

/** Sends a stream's SSE text as the relay produces it (the relay settles). */
export function deliverStream(delivery: Delivery<unknown>, body: PushedBody): Response {
  const headers = { "content-type": "text/event-stream; charset=utf-8", "x-accel-buffering": "no", [OVERHEAD_HEADER]: delivery.meter.overheadMs().toFixed(3) };
  return respondStream(delivery.c, headers, body);
}
