import { z } from "zod";
import { meteringErrors } from "../metering/metered-errors.js";
import { visibleModels } from "../catalog/model-access.js";
import { validate } from "../server/body.js";
import { ours } from "../openapi/operation.js";
import { route } from "../server/route.js";
import { geminiKeyQuery } from "./gemini-query.js";
import type { ModelRouteDeps } from "./models-routes.js";
import { geminiModel, geminiModelListSchema, geminiModelSchema } from "./model-shapes.js";
import { pageAfter } from "./model-pages.js";
import { pageSizeQuery } from "@model-gateway/worker-kit/wire/query";

// GET /compatible/v1beta/models and /compatible/v1beta/models/{model}: what @google/genai's `models.list()` and
// `models.get()` call. Only chat models: generateContent is the only method served under /compatible.

export const geminiListQuery = z.object({
  pageSize: pageSizeQuery({ min: 1, max: 1000, fallback: 50 }, "Models per page, 1 to 1000 (default 50)."),
  pageToken: z.string().optional().meta({ description: "The `nextPageToken` of the previous page." }),
});

// The token is the last model ID of the previous page, opaque to clients as Google's are.
const pageToken = (id: string) => Buffer.from(id).toString("base64url");
const afterOf = (token: string | undefined) => (token === undefined ? undefined : Buffer.from(token, "base64url").toString());

/** The chat models the key may use. */
const chatModels = ({ catalog, config }: ModelRouteDeps, key: Parameters<typeof visibleModels>[2]) =>
  visibleModels(catalog, config, key).filter(({ model }) => model.config.kind === "chat");

export const listGeminiModelsRoute = route<ModelRouteDeps>(
  {
    method: "get",
    path: "/compatible/v1beta/models",
    operationId: "listGeminiModels",
    summary: "The chat models this API key may use, in Gemini's shape (paged)",
    tag: "Inference",
    access: "apiKey",
    query: geminiKeyQuery.extend(geminiListQuery.shape),
    ok: { status: 200, description: "One page of models.", schema: ours("GeminiModelList", geminiModelListSchema) },
    errors: ["invalid_cursor"],
  },
  (deps) => (c) => {
    const query = validate(geminiListQuery, c.req.query());
    const key = c.get("apiKey");
    const page = pageAfter(chatModels(deps, key), query.pageSize, afterOf(query.pageToken), "pageToken");
    const list: z.infer<typeof geminiModelListSchema> = { models: page.items.map((m) => geminiModel(m, deps.config, key)) };
    if (page.more) list.nextPageToken = pageToken(page.items.at(-1)!.id);
    return c.json(list);
  },
);

export const getGeminiModelRoute = route<ModelRouteDeps>(
  {
    method: "get",
    path: "/compatible/v1beta/models/{model}",
    // A name with a `:method` is one of the action routes (generateContent…), whose GET is their 405, not a model.
    paramPatterns: { model: "[^:]+" },
    operationId: "getGeminiModel",
    summary: "One chat model this API key may use, in Gemini's shape",
    tag: "Inference",
    access: "apiKey",
    pathParams: { model: "The public model ID (it may hold slashes)." },
    query: geminiKeyQuery,
    ok: { status: 200, description: "The model.", schema: ours("GeminiModel", geminiModelSchema) },
    errors: ["model_not_found"],
  },
  (deps) => (c) => {
    const id = c.req.param("model")!;
    const key = c.get("apiKey");
    const found = chatModels(deps, key).find((m) => m.id === id);
    if (!found) throw meteringErrors.modelNotFound(id);
    return c.json(geminiModel(found, deps.config, key));
  },
);
