import type { Context } from "hono";
import { Hono } from "hono";
import { errors } from "../errors.js";
import { countPromptTokens, estimatePromptTokens } from "../metering/estimate.js";
import { createChatToGenerateContentStream } from "../providers/gemini/chat-to-generate-content-stream.js";
import { convertChatToGenerateContent } from "../providers/gemini/convert-chat-to-generate-content.js";
import { convertGenerateContentToChat } from "../providers/gemini/convert-generate-content-to-chat.js";
import { readGeminiStreamUsage } from "../providers/gemini/convert-usage.js";
import { isFinalGeminiChunk } from "../providers/gemini/generate-content.js";
import { geminiGenerateContentRequestSchema, type GeminiGenerateContentRequest } from "../providers/gemini/generate-content-request-schema.js";
import { collectGenerateContentText } from "../providers/gemini/response-text.js";
import type { ChatRequestBody } from "../providers/openai/chat-types.js";
import { UpstreamError } from "../providers/types.js";
import { validate } from "../server/body.js";
import type { AppEnv } from "../server/context.js";
import { answeredIn, deliverJson, deliverStream, deliverTranslatedJson, localUsage, withPublicModel, withPublicModelIn } from "./deliver.js";
import { meteredHandler, type InferenceDeps, type RouteSpec } from "./metered-route.js";
import { nativeRelay, translatedChatRelay } from "./relay-protocols.js";
import { relayStream, type RelayProtocol } from "./stream-relay.js";
import { extended } from "../objects.js";

// POST /compatible/v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse, what @google/genai
// calls with `httpOptions: {baseUrl: <gateway>/compatible, apiVersion: "v1beta"}`. The model is the path's (the
// body has none). A target speaking `gemini` gets the request as the client wrote it; a target speaking `openai`
// gets it translated to chat, and its answer translated back (docs/translation.md). Billed with the chat rule on
// usageMetadata (docs/billing.md).

export interface GenerateContentBody {
  /** The public model ID, from the path. */
  model: string;
  request: GeminiGenerateContentRequest;
  /** The chat translation: for chat targets, and for the estimates of every target. */
  chat: ChatRequestBody;
}

/** The path's last part is `{model}:{method}`; a model ID may hold slashes, never the method. */
function splitTarget(c: Context<AppEnv>): { model: string; method: string } {
  const target = c.req.param("target") ?? "";
  const colon = target.lastIndexOf(":");
  return colon < 0 ? { model: target, method: "" } : { model: target.slice(0, colon), method: target.slice(colon + 1) };
}

/**
 * Gemini's in-band error, as Google writes one into a stream (a bare JSON object, not a `data:` event), which
 * @google/genai raises as an ApiError with its code. It ends the body, so it is never followed by a delimiter.
 */
function errorFrame(requestId: string): string {
  const error = {
    code: 502,
    message: "The upstream stream ended unexpectedly.",
    status: "UNAVAILABLE",
    details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "UPSTREAM_STREAM_INTERRUPTED", domain: "gateway", metadata: { request_id: requestId } }],
  };
  return JSON.stringify({ error });
}

/** A native stream: each chunk as the provider sent it, with the public model ID as its modelVersion. */
function relayNative(publicModel: string, countPrompt: () => Promise<number>): RelayProtocol {
  return nativeRelay({
    readUsage: readGeminiStreamUsage,
    isFinal: isFinalGeminiChunk,
    collectText: collectGenerateContentText,
    countPrompt,
    errorFrame,
    write: (event) => `data: ${withPublicModelIn(event.raw, event.data, publicModel, "modelVersion")}\n\n`,
  });
}

function generateContent(stream: boolean): RouteSpec<GenerateContentBody> {
  const method = stream ? "streamGenerateContent" : "generateContent";
  return {
    route: `/compatible/v1beta/models/{model}:${method}`,
    clientProtocol: "gemini",
    kind: "chat",
    protocols: ["gemini", "openai"],
    parse(raw, c) {
      const { model } = splitTarget(c);
      if (model === "") throw errors.badRequest(`The model is missing from the path: POST /compatible/v1beta/models/{model}:${method}.`, "model", "invalid_value");
      // Without alt=sse Gemini streams one JSON array; its SDK always asks for SSE, the only form served here.
      if (stream && c.req.query("alt") !== "sse") throw errors.badRequest("streamGenerateContent is served as server-sent events only: add ?alt=sse.", "alt", "invalid_value");
      const request = validate(geminiGenerateContentRequestSchema, raw);
      return { model, request, chat: convertGenerateContentToChat(request, { model, stream }) };
    },
    describe({ model, request, chat }, config) {
      // Media without a chat form (audio, video, documents) is left out of the estimate and billed from usageMetadata.
      const extra = [chat.tools, chat.response_format];
      const generation = request.generationConfig;
      const completion = (generation?.maxOutputTokens ?? config.quota.default_completion_reserve) * (generation?.candidateCount ?? 1);
      return {
        modelId: model,
        streamed: stream,
        estimate: { promptTokens: estimatePromptTokens(chat.messages, extra), completionTokens: completion },
        countPrompt: () => countPromptTokens(chat.messages, extra),
      };
    },
    call(adapter, target, { request, chat }, options) {
      if (target.provider.protocol === "gemini") {
        const capability = stream ? adapter.streamGenerateContent : adapter.generateContent;
        if (!capability) throw new UpstreamError("connect", null);
        return capability(request, options);
      }
      if (!adapter.chatCompletions) throw new UpstreamError("connect", null);
      return adapter.chatCompletions(extended(chat, { model: target.upstreamModel }), options);
    },
    json(answer, delivery) {
      const { body, request } = delivery;
      const publicModel = body.model;
      if (answeredIn(delivery) !== "gemini") return deliverTranslatedJson(delivery, answer, (usage) => convertChatToGenerateContent(answer.body, { publicModel, usage }));
      return deliverJson(delivery, withPublicModel(answer, publicModel, "modelVersion"), answer.usage, () => {
        const generated: string[] = [];
        collectGenerateContentText(answer.body, generated);
        return localUsage(request.countPrompt, generated.join(""));
      });
    },
    stream(opened, delivery) {
      const { c, body, request, meter, upstream } = delivery;
      const protocol =
        answeredIn(delivery) === "gemini"
          ? relayNative(body.model, request.countPrompt)
          : translatedChatRelay(createChatToGenerateContentStream({ publicModel: body.model }), { countPrompt: request.countPrompt, errorFrame });
      return deliverStream(delivery, relayStream({ meter, requestId: c.get("requestId"), first: opened.first, batches: opened.batches, upstream }, protocol));
    },
  };
}

/** POST {model}:generateContent and {model}:streamGenerateContent under /compatible/v1beta/models. */
export function generateContentRoutes(deps: InferenceDeps) {
  const handlers: Record<string, ReturnType<typeof meteredHandler>> = {
    generateContent: meteredHandler(deps, generateContent(false)),
    streamGenerateContent: meteredHandler(deps, generateContent(true)),
  };
  return new Hono<AppEnv>().post("/v1beta/models/:target{.+}", (c) => {
    const { method } = splitTarget(c);
    const handler = Object.hasOwn(handlers, method) ? handlers[method] : undefined;
    if (!handler) throw errors.notFound(`Unknown route: POST ${c.req.path}; the methods served are :generateContent and :streamGenerateContent.`, "unknown_route");
    return handler(c);
  });
}
