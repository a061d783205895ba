import type { Context } from "hono";
import { z } from "zod";
import { errors } from "../errors.js";
import { identifierProblem } from "@model-gateway/worker-kit/wire/text";
import { countPromptTokens, estimatePromptTokens } from "../metering/estimate.js";
import { createChatToGenerateContentStream } from "../providers/gemini/chat-to-generate-content-stream.js";
import { convertChatToGenerateContent } from "../providers/gemini/convert-chat-to-generate-content.js";
import { convertGenerateContentToChat } from "../providers/gemini/convert-generate-content-to-chat.js";
import {
  geminiGenerateContentRequestSchema,
  type GeminiGenerateContentRequest,
} from "../providers/gemini/generate-content-request-schema.js";
import { collectGenerateContentText } from "../providers/gemini/response-text.js";
import type { ChatRequestBody } from "../providers/openai/chat-types.js";
import { UpstreamError } from "../providers/types.js";
import { validate } from "../server/body.js";
import type { AppEnv } from "../server/context.js";
import { vendor } from "../openapi/operation.js";
import { route } from "../server/route.js";
import { meteredOperation } from "../metering/metered-operation.js";
import { geminiKeyQuery } from "./gemini-query.js";
import { answeredIn, deliverJson, deliverRelayed, deliverTranslatedJson } from "../metering/deliver.js";
import { localUsage } from "../metering/estimate.js";
import { withPublicModel } from "../metering/public-model.js";
import { meteredHandler, type InferenceDeps, type RouteSpec } from "../metering/metered-handler.js";
import { generateContentErrorFrame, relayNativeGenerateContent } from "../metering/relays/generate-content-relay.js";
import { translatedChatRelay } from "../metering/relays/relay-protocols.js";
import { extended } from "../objects.js";

// POST /compatible/v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse, what @google/genai
// calls with `httpOptions: {baseUrl: <gateway>/compatible, apiVersion: "v1beta"}`. The model is the path's (the
// body has none). A target speaking `gemini` gets the request as the client wrote it; a target speaking `openai`
// gets it translated to chat, and its answer translated back (docs/translation.md). Billed with the chat rule on
// usageMetadata (docs/billing.md).

interface GenerateContentBody {
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

function generateContent(stream: boolean): RouteSpec<GenerateContentBody> {
  const method = stream ? "streamGenerateContent" : "generateContent";
  return {
    route: `/compatible/v1beta/models/{model}:${method}`,
    clientProtocol: "gemini",
    kind: "chat",
    protocols: ["gemini", "openai"],
    parse(raw, c) {
      const { model } = splitTarget(c);
      if (model === "")
        throw errors.badRequest(
          `The model is missing from the path: POST /compatible/v1beta/models/{model}:${method}.`,
          "model",
          "invalid_value",
        );
      const problem = identifierProblem(model);
      if (problem !== undefined) throw errors.badRequest(`Invalid model: ${problem}`, "model", "invalid_value");
      // Without alt=sse Gemini streams one JSON array; its SDK always asks for SSE, the only form served here.
      if (stream && c.req.query("alt") !== "sse")
        throw errors.badRequest("streamGenerateContent is served as server-sent events only: add ?alt=sse.", "alt", "invalid_value");
      const request = validate(geminiGenerateContentRequestSchema, raw);
      return { model, request, chat: convertGenerateContentToChat(request, { model, stream }) };
    },
    // Gemini names the model in the path, not the body.
    modelNamed: (_raw, c) => splitTarget(c).model,
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
        outputTokens: generation?.maxOutputTokens,
        choices: generation?.candidateCount ?? 1,
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
      if (answeredIn(delivery) !== "gemini")
        return deliverTranslatedJson(delivery, answer, (usage) => convertChatToGenerateContent(answer.body, { publicModel, usage }));
      return deliverJson(delivery, withPublicModel(answer, publicModel, "modelVersion"), answer.usage, () => {
        const generated: string[] = [];
        collectGenerateContentText(answer.body, generated);
        return localUsage(request.countPrompt, generated.join(""));
      });
    },
    stream(opened, delivery) {
      const { body, request } = delivery;
      const protocol =
        answeredIn(delivery) === "gemini"
          ? relayNativeGenerateContent(body.model, request.countPrompt)
          : translatedChatRelay(createChatToGenerateContentStream({ publicModel: body.model }), {
              countPrompt: request.countPrompt,
              errorFrame: generateContentErrorFrame,
            });
      return deliverRelayed(delivery, opened, protocol, null);
    },
  };
}

const sseOnly = geminiKeyQuery.extend({
  alt: z.literal("sse").meta({ description: "Server-sent events: the only streaming form served." }),
});

const generateContentOperation = (method: "generateContent" | "streamGenerateContent") =>
  meteredOperation("Inference", {
    method: "post",
    path: `/compatible/v1beta/models/{model}:${method}`,
    // One segment holds the model ID (which may hold slashes) and the method: one pattern serves both methods.
    served: "/compatible/v1beta/models/:target{.+}",
    operationId: method,
    summary: method === "generateContent" ? "Gemini generateContent" : "Gemini streamGenerateContent (with `?alt=sse`)",
    pathParams: { model: "The public model ID." },
    query: method === "streamGenerateContent" ? sseOnly : geminiKeyQuery,
    body: vendor("gemini", "GenerateContentRequest"),
    ok:
      method === "generateContent"
        ? { status: 200, description: "The response.", schema: vendor("gemini", "GenerateContentResponse") }
        : {
            status: 200,
            description: "The response in parts, one server-sent event each (`?alt=sse` is required: the JSON-array form is not served).",
            events: vendor("gemini", "GenerateContentResponse"),
          },
  });

/** POST {model}:generateContent and {model}:streamGenerateContent under /compatible/v1beta/models. */
export const generateContentRoute = route<InferenceDeps>(
  [generateContentOperation("generateContent"), generateContentOperation("streamGenerateContent")],
  (deps) => {
    const handlers: Record<string, ReturnType<typeof meteredHandler>> = {
      generateContent: meteredHandler(deps, generateContent(false)),
      streamGenerateContent: meteredHandler(deps, generateContent(true)),
    };
    return (c) => {
      const { method } = splitTarget(c);
      const handler = Object.hasOwn(handlers, method) ? handlers[method] : undefined;
      if (!handler)
        throw errors.notFound(
          `Unknown route: POST ${c.req.path}; the methods served are :generateContent and :streamGenerateContent.`,
          "unknown_route",
        );
      return handler(c);
    };
  },
);
