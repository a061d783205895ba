import { z } from "zod";
import type { Config } from "../config/schema.js";
import type { ApiKeyPrincipal } from "../auth/principals.js";
import type { VisibleModel } from "../catalog/model-access.js";

// One model as each vendor's SDK expects it from its model-discovery calls (docs/api.md, "Model discovery").
// The gateway knows of a model its public ID, when it appeared, who owns it and its description; what a vendor
// asks for beyond that is answered from the key's plan (the input limit) or left out, never from the upstream.

/** OpenAI `Model` (GET /v1/models and /v1/models/{model}); evaluation models also name their endpoint. */
export function openAiModel({ id, model }: VisibleModel) {
  const entry = { id, object: "model", created: model.created, owned_by: model.config.owned_by };
  return model.config.kind === "systemone" ? Object.assign(entry, { endpoints: ["v1/systemone"] }) : entry;
}

/** The prompt tokens the key's plan admits: what a model's input limit is for this caller. */
const inputLimit = (config: Config, key: ApiKeyPrincipal): number | null =>
  Object.hasOwn(config.plans, key.plan) ? config.plans[key.plan]!.context_limit : null;

/** Anthropic `ModelInfo` (with `anthropic-version`): RFC 3339 `created_at`, no capabilities or output limit known. */
export function anthropicModel({ id, model }: VisibleModel, config: Config, key: ApiKeyPrincipal) {
  return {
    type: "model" as const,
    id,
    display_name: id,
    created_at: new Date(model.created * 1000).toISOString().replace(".000Z", "Z"),
    capabilities: null,
    max_input_tokens: inputLimit(config, key),
    max_tokens: null,
  };
}

/** The generation methods the gateway serves under /compatible/v1beta (generate-content-routes.ts). */
export const GEMINI_METHODS = ["generateContent", "streamGenerateContent"];

// Gemini's `Model` and `ListModelsResponse` (google/ai/generativelanguage/v1beta/model.proto and
// model_service.proto, proto3 JSON). Not in ../shared/reference, so ours, field for field.
export const geminiModelSchema = z.object({
  name: z.string().meta({ description: "`models/{model}`, the public model ID after `models/`." }),
  baseModelId: z.string(),
  version: z.string().meta({ description: "The model's `release_date`, else `1`." }),
  displayName: z.string(),
  description: z.string(),
  inputTokenLimit: z.int().optional().meta({ description: "The context limit of the key's plan." }),
  supportedGenerationMethods: z.array(z.string()),
});

export const geminiModelListSchema = z.object({
  models: z.array(geminiModelSchema),
  nextPageToken: z.string().optional().meta({ description: "Pass as `pageToken` for the next page; absent on the last." }),
});

/** Gemini `Model` of a chat model. */
export function geminiModel({ id, model }: VisibleModel, config: Config, key: ApiKeyPrincipal): z.infer<typeof geminiModelSchema> {
  const limit = inputLimit(config, key);
  return {
    name: `models/${id}`,
    baseModelId: id,
    version: model.config.release_date ?? "1",
    displayName: id,
    description: model.config.description,
    // proto3 JSON leaves an unknown limit out rather than sending 0.
    inputTokenLimit: limit ?? undefined,
    supportedGenerationMethods: GEMINI_METHODS,
  };
}
