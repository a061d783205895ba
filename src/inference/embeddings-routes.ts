import { z } from "zod";
import { identifier } from "@model-gateway/worker-kit/wire/text";
import { countTextTokens, estimateTextTokens } from "../metering/estimate.js";
import { encodeEmbeddingBase64 } from "../providers/openai/embedding-base64.js";
import type { JsonResult } from "../providers/types.js";
import { UpstreamError } from "../providers/types.js";
import { validate } from "../server/body.js";
import { vendor } from "../openapi/operation.js";
import { route } from "../server/route.js";
import { meteredOperation } from "../metering/metered-operation.js";
import { deliverJson } from "../metering/deliver.js";
import { localUsage } from "../metering/estimate.js";
import { withPublicModel } from "../metering/public-model.js";
import { meteredHandler, type InferenceDeps, type RouteSpec } from "../metering/metered-handler.js";
import { extended } from "../objects.js";

// POST /v1/embeddings (spec "Embeddings request"): `input` a string or an array of strings, `encoding_format`
// float or base64. Billed on input tokens (docs/billing.md). Other fields (`dimensions`, `user`, …) are
// forwarded untouched, as for chat.

/** OpenAI's own cap on inputs per request. */
const MAX_INPUTS = 2048;

const embeddingsRequestSchema = z.looseObject({
  model: identifier(),
  input: z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(MAX_INPUTS)], {
    error: `input must be a non-empty string or an array of 1 to ${MAX_INPUTS} non-empty strings`,
  }),
  encoding_format: z.enum(["float", "base64"]).optional(),
});
type EmbeddingsRequest = z.infer<typeof embeddingsRequestSchema>;

const inputsOf = (body: EmbeddingsRequest): string[] => (typeof body.input === "string" ? [body.input] : body.input);

/** An answer whose `data` is not a list of embeddings (numbers, or base64 text) is invalid: bad gateway, fallback. */
function checkAnswer(answer: JsonResult): JsonResult {
  const data = answer.body.data;
  const valid =
    Array.isArray(data) &&
    data.every((item: unknown) => {
      const embedding = (item as { embedding?: unknown } | null)?.embedding;
      return typeof embedding === "string" || (Array.isArray(embedding) && embedding.every((v) => typeof v === "number"));
    });
  if (!valid) throw new UpstreamError("protocol", answer.status);
  return answer;
}

/**
 * The answer with each embedding as the client asked: a provider that ignores `encoding_format: "base64"`
 * answers floats, which are encoded here exactly as OpenAI would (float32 little-endian).
 */
function shapeAnswer(answer: JsonResult, body: EmbeddingsRequest): string {
  const data = answer.body.data as { embedding: number[] | string }[];
  if (body.encoding_format !== "base64" || !data.some((item) => Array.isArray(item.embedding))) return withPublicModel(answer, body.model);
  for (const item of data) if (Array.isArray(item.embedding)) item.embedding = encodeEmbeddingBase64(item.embedding);
  answer.body.model = body.model;
  return JSON.stringify(answer.body);
}

const embeddings: RouteSpec<EmbeddingsRequest> = {
  route: "/v1/embeddings",
  clientProtocol: "openai",
  protocols: ["openai"],
  kind: "embedding",
  parse: (raw) => validate(embeddingsRequestSchema, raw),
  describe(body) {
    const inputs = inputsOf(body);
    return {
      modelId: body.model,
      streamed: false,
      estimate: { promptTokens: inputs.reduce((sum, text) => sum + estimateTextTokens(text), 0), completionTokens: 0 },
      countPrompt: async () => {
        let tokens = 0;
        for (const text of inputs) tokens += await countTextTokens(text);
        return tokens;
      },
    };
  },
  async call(adapter, target, body, options) {
    if (!adapter.embeddings) throw new UpstreamError("connect", null);
    return checkAnswer(await adapter.embeddings(extended(body, { model: target.upstreamModel }), options));
  },
  json(answer, delivery) {
    const { body, request } = delivery;
    return deliverJson(delivery, shapeAnswer(answer, body), answer.usage, () => localUsage(request.countPrompt, ""));
  },
};

/** POST /v1/embeddings through the metering path. */
export const embeddingsRoute = route<InferenceDeps>(
  meteredOperation("Inference", {
    method: "post",
    path: "/v1/embeddings",
    operationId: "createEmbedding",
    summary: "OpenAI embeddings",
    body: vendor("openai", "CreateEmbeddingRequest"),
    ok: { status: 200, description: "The embeddings.", schema: vendor("openai", "CreateEmbeddingResponse") },
  }),
  (deps) => meteredHandler(deps, embeddings),
);
