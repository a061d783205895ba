import type { ProviderConfig } from "../config/schema.js";
import { localUsage } from "./estimate.js";
import type { JsonResult, UsageReport } from "../providers/types.js";
import { respondBytes, respondStream, respondText, type PushedBody } from "../server/respond.js";
import { errors } from "../errors.js";
import type { Charge } from "./request-meter.js";
import { clientGone } from "./client-disconnect.js";
import { chatCompletionText } from "../providers/openai/chat-text.js";
import type { Delivery, OpenedStream } from "./metered-handler.js";
import { relayStream, type RelayProtocol } from "./relays/stream-relay.js";
import type { ChargeCarrier } from "./relays/charge-frames.js";

/** The gateway's own time on a request, in ms (like LiteLLM's x-litellm-overhead-duration-ms). */
const OVERHEAD_HEADER = "x-gateway-overhead-ms";
/** What the request was charged, committed before the answer's last byte (docs/api.md, "Charges"). */
const CHARGE_HEADER = "x-gateway-charge";
const CHARGE_USD_HEADER = "x-gateway-charge-usd";

/** The charge headers of an answer, added to `headers`. */
export function withChargeHeaders(headers: Record<string, string>, charge: Charge): Record<string, string> {
  headers[CHARGE_HEADER] = String(charge.units);
  if (charge.usd !== null) headers[CHARGE_USD_HEADER] = charge.usd;
  return headers;
}

// How every metered route hands its answer over: the public model ID in, the overhead header on, the meter
// settled. A route says only what its answer is.

/**
 * Settles a JSON answer from the upstream's usage, or the local count marked estimated, and sends it once the charge
 * is committed (docs/billing.md, "Settlement"), with the charge in its headers. A charge the database could not
 * commit in time is withdrawn and the answer refused with 503 (nothing charged). A client that left while the
 * answer was on its way gets nothing, so its hold is released instead.
 */
export async function deliverJson(
  delivery: Delivery<unknown>,
  text: string | readonly Uint8Array[],
  usage: UsageReport | null,
  counted: () => Promise<UsageReport>,
): Promise<Response> {
  const { c, meter } = delivery;
  if (delivery.upstream.aborted || clientGone(c)) {
    void meter.fail(errors.clientClosed());
    return c.body(null, 499 as never);
  }
  meter.markFirstByte();
  const charge = await meter.settleBeforeAnswer(usage ?? counted(), usage ? "upstream" : "estimated");
  const headers = { "content-type": "application/json", [OVERHEAD_HEADER]: meter.overheadMs().toFixed(3) };
  withChargeHeaders(headers, charge);
  return typeof text === "string" ? respondText(c, 200, text, headers) : respondBytes(c, 200, text, headers);
}

/** Sends a stream's SSE text as the relay produces it (the relay settles). */
export function deliverStream(delivery: Delivery<unknown>, body: PushedBody): Response {
  const headers = {
    "content-type": "text/event-stream; charset=utf-8",
    "x-accel-buffering": "no",
    [OVERHEAD_HEADER]: delivery.meter.overheadMs().toFixed(3),
  };
  return respondStream(delivery.c, headers, body);
}

/**
 * Relays an opened upstream stream in the client's `protocol` and sends it; `carrier` puts the charge in the
 * protocol's final usage event (null: an SSE comment).
 */
export function deliverRelayed(
  delivery: Delivery<unknown>,
  opened: OpenedStream,
  protocol: RelayProtocol,
  carrier: ChargeCarrier | null,
): Response {
  const { c, meter, upstream, outputCap } = delivery;
  const body = relayStream(
    { meter, requestId: c.get("requestId"), first: opened.first, batches: opened.batches, upstream, outputCap, carrier },
    protocol,
  );
  return deliverStream(delivery, body);
}

/** The protocol of the target that answered, which decides whether the answer is relayed or translated. */
export const answeredIn = (delivery: Delivery<unknown>): ProviderConfig["protocol"] | undefined =>
  delivery.meter.upstream?.provider.protocol;

/**
 * Sends an OpenAI chat answer translated into the client's protocol by `render`, which gets the usage that is
 * billed (the upstream's, else the local count), so the client is shown what it pays for.
 */
export async function deliverTranslatedJson(
  delivery: Delivery<unknown>,
  answer: JsonResult,
  render: (usage: UsageReport) => unknown,
): Promise<Response> {
  const usage = answer.usage ?? (await localUsage(delivery.request.countPrompt, chatCompletionText(answer.body)));
  return deliverJson(delivery, JSON.stringify(render(usage)), answer.usage, async () => usage);
}
