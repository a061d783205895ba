import { z } from "zod";
import { ERROR_CODES } from "../errors.js";
import { METERED_ERROR_CODES, UPSTREAM_KEY_HEADER_NAME } from "../metering/metered-errors.js";
import { ANTHROPIC_BETA } from "../providers/anthropic/anthropic-beta.js";
import { anyOf, ours, vendor, type OperationDescription } from "../server/api-description.js";
import { geminiListQuery } from "./gemini-models-route.js";
import { geminiModelListSchema, geminiModelSchema } from "./model-shapes.js";
import { anthropicListQuery, nativeModelListSchema } from "./models-route.js";
import { systemOneRequestSchema } from "../providers/systemone/request-schema.js";
import { evaluationResponseSchema, evaluationStatus } from "./systemone-route.js";

// The inference routes in the API description. The wire shapes the gateway speaks for a vendor's SDK are that
// vendor's own schemas (vendor-schemas/, from ../shared/reference); the evaluation service's are ours.

const byok = { [UPSTREAM_KEY_HEADER_NAME]: "Your own key for the model's provider (bring-your-own key), used instead of the gateway's." };

/** A billed route: its answer names its committed charge (docs/api.md, "Charges"). */
function metered(op: Omit<OperationDescription, "access" | "tag" | "errors">): OperationDescription {
  const described = Object.assign({ access: "apiKey", tag: "Inference", errors: METERED_ERROR_CODES, headers: byok } as const, op);
  return op.ok ? Object.assign(described, { ok: Object.assign({ charged: true }, op.ok) }) : described;
}

const messages = (path: string, operationId: string): OperationDescription =>
  metered({
    method: "post",
    path,
    operationId,
    summary: `Anthropic messages${path === "/messages" ? "" : " (where the Anthropic SDK appends /v1/messages)"}`,
    body: vendor("anthropic", "CreateMessageParams"),
    ok: {
      status: 200,
      description: "The message; with `stream: true`, its server-sent events.",
      schema: vendor("anthropic", "Message"),
      events: vendor("anthropic", "MessageStreamEvent"),
    },
    headers: Object.assign({ [ANTHROPIC_BETA]: "Anthropic beta features, forwarded to Anthropic providers." }, byok),
  });

/** Every Gemini route also takes the key in the query string, as Google's API does. */
const geminiKey = z.object({
  key: z.string().optional().meta({ description: "The API key, when no header carries one (as Google's own API takes it)." }),
});

const sseOnly = geminiKey.extend({ alt: z.literal("sse").meta({ description: "Server-sent events: the only streaming form served." }) });

const GEMINI_ROUTE = "/compatible/v1beta/models/:target{.+}";

const generateContent = (method: "generateContent" | "streamGenerateContent"): OperationDescription =>
  metered({
    method: "post",
    path: `/compatible/v1beta/models/{model}:${method}`,
    served: GEMINI_ROUTE,
    operationId: method,
    summary: method === "generateContent" ? "Gemini generateContent" : "Gemini streamGenerateContent (with `?alt=sse`)",
    pathParams: { model: "The public model ID." },
    query: method === "streamGenerateContent" ? sseOnly : geminiKey,
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

const evaluation = (path: string, operationId: string): OperationDescription => ({
  method: "post",
  path,
  operationId,
  summary: "The evaluation service: answers the questions about one state",
  tag: "Evaluation",
  access: "apiKey",
  body: ours("EvaluationRequest", systemOneRequestSchema),
  ok: {
    status: 200,
    description: "The checked answers and the usage.",
    schema: ours("EvaluationResponse", evaluationResponseSchema),
    charged: true,
  },
  errors: [...METERED_ERROR_CODES, "token_limit_exceeded", "body_budget_exhausted"],
  headers: byok,
  statusOf: (code) => evaluationStatus(ERROR_CODES[code].status, code),
});

const anthropicVersion = {
  "anthropic-version": "Sent by the Anthropic SDK: the answer is then in Anthropic's shape, and lists only chat models.",
};

const modelOperations: OperationDescription[] = [
  {
    method: "get",
    path: "/v1/models",
    operationId: "listModels",
    summary: "The models this API key may use (OpenAI's shape; Anthropic's with `anthropic-version`)",
    tag: "Inference",
    access: "apiKey",
    headers: anthropicVersion,
    query: anthropicListQuery,
    ok: {
      status: 200,
      description: "The list: every model, in OpenAI's shape; with `anthropic-version`, one page of the chat models in Anthropic's.",
      schema: anyOf("ModelList", vendor("openai", "ListModelsResponse"), vendor("anthropic", "ListResponse_ModelInfo_")),
    },
    errors: ["invalid_cursor"],
  },
  {
    method: "get",
    path: "/v1/models/{model}",
    operationId: "retrieveModel",
    summary: "One model this API key may use (OpenAI's shape; Anthropic's with `anthropic-version`)",
    tag: "Inference",
    access: "apiKey",
    pathParams: { model: "The public model ID (it may hold slashes)." },
    headers: anthropicVersion,
    ok: {
      status: 200,
      description: "The model.",
      schema: anyOf("ModelEntry", vendor("openai", "Model"), vendor("anthropic", "ModelInfo")),
    },
    errors: ["model_not_found"],
  },
  {
    method: "get",
    path: "/compatible/v1beta/models",
    operationId: "listGeminiModels",
    summary: "The chat models this API key may use, in Gemini's shape (paged)",
    tag: "Inference",
    access: "apiKey",
    query: geminiKey.extend(geminiListQuery.shape),
    ok: { status: 200, description: "One page of models.", schema: ours("GeminiModelList", geminiModelListSchema) },
    errors: ["invalid_cursor"],
  },
  {
    method: "get",
    path: "/compatible/v1beta/models/{model}",
    operationId: "getGeminiModel",
    summary: "One chat model this API key may use, in Gemini's shape",
    tag: "Inference",
    access: "apiKey",
    pathParams: { model: "The public model ID (it may hold slashes)." },
    query: geminiKey,
    ok: { status: 200, description: "The model.", schema: ours("GeminiModel", geminiModelSchema) },
    errors: ["model_not_found"],
  },
];

export const inferenceOperations: OperationDescription[] = [
  ...modelOperations,
  {
    method: "get",
    path: "/native/v1/models",
    operationId: "listNativeModels",
    summary: "The evaluation models this API key may use, in the native SDK's shape",
    tag: "Evaluation",
    access: "apiKey",
    ok: { status: 200, description: "The list.", schema: ours("NativeModelList", nativeModelListSchema) },
  },
  metered({
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
  metered({
    method: "post",
    path: "/v1/embeddings",
    operationId: "createEmbedding",
    summary: "OpenAI embeddings",
    body: vendor("openai", "CreateEmbeddingRequest"),
    ok: { status: 200, description: "The embeddings.", schema: vendor("openai", "CreateEmbeddingResponse") },
  }),
  metered({
    method: "post",
    path: "/v1/responses",
    operationId: "createResponse",
    summary: "OpenAI responses",
    body: vendor("openai", "CreateResponse"),
    ok: {
      status: 200,
      description: "The response; with `stream: true`, its events as server-sent events.",
      schema: vendor("openai", "Response"),
      events: vendor("openai", "ResponseStreamEvent"),
    },
  }),
  messages("/messages", "createMessage"),
  messages("/v1/messages", "createMessageV1"),
  generateContent("generateContent"),
  generateContent("streamGenerateContent"),
  evaluation("/v1/systemone", "evaluate"),
  evaluation("/native/v1/systemone", "evaluateNative"),
  {
    method: "post",
    path: "/v1/evaluate",
    operationId: "evaluateRemoved",
    summary: "Removed: send the same body to POST /v1/systemone",
    tag: "Evaluation",
    access: "apiKey",
    errors: ["route_removed"],
    deprecated: true,
  },
];
