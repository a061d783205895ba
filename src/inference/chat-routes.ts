import { countPromptTokens, estimatePromptTokens } from "../metering/estimate.js";
import { UpstreamError } from "../providers/types.js";
import { vendor } from "../openapi/operation.js";
import { route } from "../server/route.js";
import { meteredOperation } from "../metering/metered-operation.js";
import { toChatRequest, type ChatRequest } from "./chat-schema.js";
import { relayChatStream } from "../metering/relays/chat-relay.js";
import { chatCharge } from "../metering/relays/charge-frames.js";
import { chatCompletionText } from "../providers/openai/chat-text.js";
import { answeredIn, deliverJson, deliverRelayed, deliverStream } from "../metering/deliver.js";
import { localUsage } from "../metering/estimate.js";
import { withPublicModel } from "../metering/public-model.js";
import { meteredHandler, type Delivery, type InferenceDeps, type RouteSpec } from "../metering/metered-handler.js";
import { extended } from "../objects.js";
import { chatImageSlots, deliverChatImages, type ImageSlot } from "../providers/upstream-images/chat-images.js";
import type { ImageDownload } from "../providers/upstream-images/image-delivery.js";
import { clientDisconnect } from "../metering/client-disconnect.js";
import type { JsonResult } from "../providers/types.js";
import { validate } from "../server/body.js";
import type { CatalogModel } from "../catalog/catalog.js";
import { chatTranslationSchema } from "../providers/openai/chat-translation-schema.js";
import { convertChatRequestToGemini, type GeminiRequest } from "../providers/gemini/convert-chat-request-to-gemini.js";
import { convertGeminiAnswerToChat, toChatUsage } from "../providers/gemini/convert-gemini-answer-to-chat.js";
import { geminiChatRelay } from "../metering/relays/gemini-chat-relay.js";

// POST /v1/chat/completions. A target speaking `openai` gets the request as the client wrote it (model
// rewritten); a target speaking `gemini` gets it translated to generateContent, and its answer translated back
// (src/providers/gemini, docs/translation.md). The choice is per target, so fallback may cross protocols. Billed
// with the chat rule on the normalised usage (docs/billing.md).

interface ChatBody {
  chat: ChatRequest;
  /** The generateContent translation, made at admission when the model has a `gemini` target. */
  gemini: GeminiRequest | null;
}

/** The translation for a model with a `gemini` target: its checks refuse (400) what cannot be translated, before anything is held. */
function admitTranslation(body: ChatBody, model: CatalogModel): Promise<void> {
  if (model.targets.some((t) => t.provider.protocol === "gemini"))
    body.gemini = convertChatRequestToGemini(validate(chatTranslationSchema, body.chat));
  return Promise.resolve();
}

const sendJson = (answer: JsonResult, delivery: Delivery<ChatBody>, text: string) =>
  deliverJson(delivery, text, answer.usage, () => localUsage(delivery.request.countPrompt, chatCompletionText(answer.body)));

/**
 * An answer with images: each delivered as a data: URI (src/providers/upstream-images/chat-images.ts), then the answer serialised
 * again and sent by `send`. One that cannot be delivered throws `invalid_output`: 502 `upstream_invalid_output`, the hold voided.
 */
async function withImages(
  body: Record<string, unknown>,
  delivery: Delivery<ChatBody>,
  slots: ImageSlot[],
  download: ImageDownload,
  send: (text: string) => Promise<Response>,
) {
  // The runner stopped watching the client once the upstream answered; a download is worth cancelling too.
  const stopWatching = clientDisconnect(delivery.c, delivery.upstream);
  try {
    await deliverChatImages(slots, download, delivery.upstream);
  } finally {
    stopWatching();
  }
  body.model = delivery.body.chat.model;
  return send(JSON.stringify(body));
}

/**
 * A Gemini answer as a chat completion: its usage is the one billed (usageMetadata's, else the local count), its
 * images delivered by the same validated path as a chat upstream's.
 */
async function fromGemini(answer: JsonResult, delivery: Delivery<ChatBody>, download: ImageDownload) {
  const completion = convertGeminiAnswerToChat(answer.body, { publicModel: delivery.body.chat.model });
  const body = completion as unknown as Record<string, unknown>;
  const billed = answer.usage ?? (await localUsage(delivery.request.countPrompt, chatCompletionText(body)));
  completion.usage ??= toChatUsage(billed);
  const send = (text: string) => deliverJson(delivery, text, answer.usage, () => Promise.resolve(billed));
  const images = chatImageSlots(completion.choices, "message");
  return images ? withImages(body, delivery, images, download, send) : send(JSON.stringify(completion));
}

const chatSpec = (download: ImageDownload): RouteSpec<ChatBody> => ({
  route: "/v1/chat/completions",
  clientProtocol: "openai",
  protocols: ["openai", "gemini"],
  kind: "chat",
  parse: (raw) => ({ chat: toChatRequest(raw), gemini: null }),
  describe({ chat: body }, config) {
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
  admit: admitTranslation,
  call(adapter, target, { chat, gemini }, options) {
    if (target.provider.protocol === "gemini") {
      const capability = chat.stream === true ? adapter.streamGenerateContent : adapter.generateContent;
      if (!capability || !gemini) throw new UpstreamError("connect", null);
      return capability(gemini, options);
    }
    if (!adapter.chatCompletions) throw new UpstreamError("connect", null);
    return adapter.chatCompletions(extended(chat, { model: target.upstreamModel }), options);
  },
  json(answer, delivery) {
    if (answeredIn(delivery) === "gemini") return fromGemini(answer, delivery, download);
    const images = chatImageSlots(answer.body.choices, "message");
    if (images) return withImages(answer.body, delivery, images, download, (text) => sendJson(answer, delivery, text));
    return sendJson(answer, delivery, withPublicModel(answer, delivery.body.chat.model));
  },
  stream(opened, delivery) {
    const { c, body, request, meter, upstream } = delivery;
    const clientWantsUsage = body.chat.stream_options?.include_usage === true;
    if (answeredIn(delivery) === "gemini") {
      const protocol = geminiChatRelay({
        publicModel: body.chat.model,
        clientWantsUsage,
        countPrompt: request.countPrompt,
        download,
        upstream,
      });
      return deliverRelayed(delivery, opened, protocol, chatCharge);
    }
    return deliverStream(
      delivery,
      relayChatStream({
        meter,
        publicModel: body.chat.model,
        requestId: c.get("requestId"),
        clientWantsUsage,
        first: opened.first,
        batches: opened.batches,
        countPrompt: request.countPrompt,
        upstream,
        download,
        outputCap: delivery.outputCap,
        choices: body.chat.n ?? 1,
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
