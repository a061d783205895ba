import { Hono } from "hono";
import { countPromptTokens, estimatePromptTokens } from "../metering/estimate.js";
import { UpstreamError } from "../providers/types.js";
import type { AppEnv } from "../server/context.js";
import { toChatRequest, type ChatRequest } from "./chat-schema.js";
import { relayChatStream } from "../metering/relays/chat-relay.js";
import { chatCompletionText } from "../providers/openai/chat-text.js";
import { deliverJson, deliverStream, localUsage, withPublicModel } from "../metering/deliver.js";
import { meteredHandler, type InferenceDeps, type RouteSpec } from "../metering/runner.js";
import { extended } from "../objects.js";

const chat: RouteSpec<ChatRequest> = {
  route: "/v1/chat/completions",
  clientProtocol: "openai",
  protocols: ["openai"],
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
    return adapter.chatCompletions(extended(body, { model: target.upstreamModel }), options);
  },
  json(answer, delivery) {
    const { body, request } = delivery;
    return deliverJson(delivery, withPublicModel(answer, body.model), answer.usage, () =>
      localUsage(request.countPrompt, chatCompletionText(answer.body)),
    );
  },
  stream(opened, delivery) {
    const { c, body, request, meter, upstream } = delivery;
    return deliverStream(
      delivery,
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
