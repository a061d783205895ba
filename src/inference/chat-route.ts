import { Hono } from "hono";
import { countPromptTokens, countTextTokens, estimatePromptTokens } from "../metering/estimate.js";
import type { JsonResult, UsageReport } from "../providers/types.js";
import { UpstreamError } from "../providers/types.js";
import type { AppEnv } from "../server/context.js";
import { respondStream, respondText } from "../server/respond.js";
import { toChatRequest, type ChatRequest } from "./chat-schema.js";
import { relayChatStream } from "./chat-stream.js";
import { collectChoicesText } from "./chat-text.js";
import { OVERHEAD_HEADER } from "./client.js";
import { applyEdits, findMembers } from "./json-members.js";
import { meteredHandler, type Delivery, type InferenceDeps, type RouteSpec } from "./metered-route.js";

/** Completion text of a JSON answer, for the local count when the upstream reports no usage. */
function completionText(body: Record<string, unknown>): string {
  const parts: string[] = [];
  collectChoicesText(body.choices, "message", parts);
  return parts.join("");
}

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

/** Settles a delivered JSON answer from the upstream's usage, or the local count marked estimated. */
export function settleJson(delivery: Delivery<unknown>, usage: UsageReport | null, counted: () => Promise<UsageReport>): void {
  delivery.meter.markFirstByte();
  void delivery.meter.settle(usage ?? counted(), usage ? "upstream" : "estimated");
}

const chat: RouteSpec<ChatRequest> = {
  route: "/v1/chat/completions",
  clientProtocol: "openai",
  kind: "chat",
  parse: toChatRequest,
  describe(body, config) {
    const extra = [body.tools, body.response_format];
    const completionCap = body.max_completion_tokens ?? body.max_tokens ?? config.quota.default_completion_reserve;
    return {
      modelId: body.model,
      streamed: body.stream === true,
      estimate: { promptTokens: estimatePromptTokens(body.messages, extra), completionTokens: completionCap * (body.n ?? 1) },
      countPrompt: () => countPromptTokens(body.messages, extra),
    };
  },
  call(adapter, target, body, options) {
    if (!adapter.chatCompletions) throw new UpstreamError("connect", null);
    return adapter.chatCompletions({ ...body, model: target.upstreamModel }, options);
  },
  json(answer, delivery) {
    const { c, body, request, meter } = delivery;
    const text = withPublicModel(answer, body.model);
    settleJson(delivery, answer.usage, async () => ({
      promptTokens: await request.countPrompt(),
      completionTokens: await countTextTokens(completionText(answer.body)),
      cachedTokens: 0,
    }));
    return respondText(c, 200, text, { "content-type": "application/json", [OVERHEAD_HEADER]: meter.overheadMs().toFixed(3) });
  },
  stream(opened, { c, body, request, meter, upstream }) {
    return respondStream(
      c,
      { "content-type": "text/event-stream; charset=utf-8", "x-accel-buffering": "no", [OVERHEAD_HEADER]: meter.overheadMs().toFixed(3) },
      relayChatStream({
        meter,
        publicModel: body.model,
        requestId: c.get("requestId"),
        clientWantsUsage: body.stream_options?.include_usage === true,
        first: opened.first,
        batches: opened.batches,
        countPrompt: request.countPrompt,
        upstream,
      }),
    );
  },
};

/** POST /v1/chat/completions, JSON and SSE, through the metering path. */
export function chatRoutes(deps: InferenceDeps) {
  return new Hono<AppEnv>().post("/chat/completions", meteredHandler(deps, chat));
}
