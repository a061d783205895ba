import type { ProviderConfig } from "../config/schema.js";
import { countTextTokens } from "./estimate.js";
import type { JsonResult, UsageReport } from "../providers/types.js";
import { respondStream, respondText, type PushedBody } from "../server/respond.js";
import { errors } from "../errors.js";
import { clientGone } from "./client-disconnect.js";
import { applyEdits, findMembers } from "./json-members.js";
import { chatCompletionText } from "../providers/openai/chat-text.js";
import type { Delivery } from "./runner.js";

/** The gateway's own time on a request, in ms (like LiteLLM's x-litellm-overhead-duration-ms). */
const OVERHEAD_HEADER = "x-gateway-overhead-ms";

// How every metered route hands its answer over: the public model ID in, the overhead header on, the meter
// settled. A route says only what its answer is.

/**
 * An upstream JSON text (`parsed` is its parse) with the public model ID as its top-level `member` (`model`,
 * Gemini's `modelVersion`), serialised again only when the edit in the text would be ambiguous.
 */
export function withPublicModelIn(raw: string, parsed: Record<string, unknown>, publicModel: string, member = "model"): string {
  const found = findMembers(raw, [member])?.get(member);
  if (found) return applyEdits(raw, [{ start: found.valueStart, end: found.valueEnd, text: JSON.stringify(publicModel) }]);
  parsed[member] = publicModel;
  return JSON.stringify(parsed);
}

/** The answer as the client gets it: the upstream's text with the public model ID put in. */
export const withPublicModel = (answer: JsonResult, publicModel: string, member = "model"): string =>
  withPublicModelIn(answer.raw, answer.body, publicModel, member);

/**
 * Sends a JSON answer and settles it from the upstream's usage, or the local count marked estimated. A client
 * that left while the answer was on its way gets nothing, so its hold is released instead.
 */
export function deliverJson(
  delivery: Delivery<unknown>,
  text: string,
  usage: UsageReport | null,
  counted: () => Promise<UsageReport>,
): Response {
  const { c, meter } = delivery;
  if (delivery.upstream.aborted || clientGone(c)) {
    void meter.fail(errors.clientClosed());
    return c.body(null, 499 as never);
  }
  meter.markFirstByte();
  void meter.settle(usage ?? counted(), usage ? "upstream" : "estimated");
  return respondText(c, 200, text, { "content-type": "application/json", [OVERHEAD_HEADER]: meter.overheadMs().toFixed(3) });
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

/** The local count of an answer without usage: the prompt by the tokenizer, plus the text it generated. */
export async function localUsage(countPrompt: () => Promise<number>, generated: string): Promise<UsageReport> {
  return { promptTokens: await countPrompt(), completionTokens: await countTextTokens(generated), cachedTokens: 0 };
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
