import { countPromptTokens, estimatePromptTokens } from "../metering/estimate.js";
import { UpstreamError } from "../providers/types.js";
import { vendor } from "../openapi/operation.js";
import { route } from "../server/route.js";
import { meteredOperation } from "../metering/metered-operation.js";
import { toChatRequest, type ChatRequest } from "./chat-schema.js";
import { relayChatStream } from "../metering/relays/chat-relay.js";
import { chatCharge } from "../metering/relays/charge-frames.js";
import { chatCompletionText } from "../providers/openai/chat-text.js";
import { deliverJson, deliverStream } from "../metering/deliver.js";
import { localUsage } from "../metering/estimate.js";
import { withPublicModel } from "../metering/public-model.js";
import { meteredHandler, type Delivery, type InferenceDeps, type RouteSpec } from "../metering/metered-handler.js";
import { extended } from "../objects.js";
import { chatImageSlots, deliverChatImages, type ImageSlot } from "../providers/upstream-images/chat-images.js";
import type { ImageDownload } from "../providers/upstream-images/image-delivery.js";
import { clientDisconnect } from "../metering/client-disconnect.js";
import type { JsonResult } from "../providers/types.js";

const sendJson = (answer: JsonResult, delivery: Delivery<ChatRequest>, text: string) =>
  deliverJson(delivery, text, answer.usage, () => localUsage(delivery.request.countPrompt, chatCompletionText(answer.body)));

/**
 * An answer with images: each delivered as a data: URI (src/providers/upstream-images/chat-images.ts), then the answer serialised
 * again. One that cannot be delivered throws `invalid_output`: 502 `upstream_invalid_output`, the hold voided.
 */
async function withImages(answer: JsonResult, delivery: Delivery<ChatRequest>, slots: ImageSlot[], download: ImageDownload) {
  // The runner stopped watching the client once the upstream answered; a download is worth cancelling too.
  const stopWatching = clientDisconnect(delivery.c, delivery.upstream);
  try {
    await deliverChatImages(slots, download, delivery.upstream);
  } finally {
    stopWatching();
  }
  answer.body.model = delivery.body.model;
  return sendJson(answer, delivery, JSON.stringify(answer.body));
}

const chatSpec = (download: ImageDownload): RouteSpec<ChatRequest> => ({
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
      outputTokens: body.max_completion_tokens ?? body.max_tokens,
      choices: body.n ?? 1,
    };
  },
  call(adapter, target, body, options) {
    if (!adapter.chatCompletions) throw new UpstreamError("connect", null);
    return adapter.chatCompletions(extended(body, { model: target.upstreamModel }), options);
  },
  json(answer, delivery) {
    const images = chatImageSlots(answer.body.choices, "message");
    if (images) return withImages(answer, delivery, images, download);
    return sendJson(answer, delivery, withPublicModel(answer, delivery.body.model));
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
        download,
        outputCap: delivery.outputCap,
        choices: body.n ?? 1,
        carrier: chatCharge,
      }),
    );
  },
});

/** POST /v1/chat/completions, JSON and SSE, through the metering path. */
export const chatRoute = route<InferenceDeps>(
  meteredOperation("Inference", {
    method: "post",
    path: "/v1/chat/completions",
    operationId: "createChatCompletion",
    summary: "OpenAI chat completions",
    body: vendor("openai", "CreateChatCompletionRequest"),
    ok: {
      status: 200,
      description: "The completion; with `stream: true`, its chunks as server-sent events, then `data: [DONE]`.",
      schema: vendor("openai", "CreateChatCompletionResponse"),
      events: vendor("openai", "CreateChatCompletionStreamResponse"),
    },
  }),
  (deps) => meteredHandler(deps, chatSpec(deps.download)),
);
