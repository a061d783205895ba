import type { Context } from "hono";
import { z } from "zod";
import type { Catalog } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import { meteringErrors } from "../metering/metered-errors.js";
import { visibleModels, type VisibleModel } from "../catalog/model-access.js";
import { validate } from "../server/body.js";
import type { AppEnv } from "../server/context.js";
import { anyOf, ours, vendor } from "../openapi/operation.js";
import { route } from "../server/route.js";
import { requestHeader } from "../server/headers.js";
import { anthropicModel, openAiModel } from "./model-shapes.js";
import { pageAfter, pageBefore } from "./model-pages.js";
import { pageSizeQuery } from "@model-gateway/worker-kit/wire/query";

// GET /v1/models and /v1/models/{model}: the models a key may use, in OpenAI's shape, or in Anthropic's when the
// request carries `anthropic-version` (the Anthropic SDK sends it on every call, and shares these paths).

export const anthropicListQuery = z.object({
  limit: pageSizeQuery({ min: 1, max: 1000, fallback: 20 }, "With `anthropic-version`: models per page, 1 to 1000 (default 20)."),
  after_id: z.string().optional().meta({ description: "With `anthropic-version`: the page after this model ID." }),
  before_id: z.string().optional().meta({ description: "With `anthropic-version`: the page before this model ID." }),
});

const isAnthropic = (c: Context<AppEnv>) => requestHeader(c, "anthropic-version") !== undefined;

/** The models of an Anthropic client: those its messages route serves (chat models). */
const anthropicVisible = (visible: VisibleModel[]) => visible.filter(({ model }) => model.config.kind === "chat");

/** The one model `id` names among those the key may use; an unknown ID and one the key may not use answer alike. */
function visibleModel(visible: readonly VisibleModel[], id: string): VisibleModel {
  const found = visible.find((v) => v.id === id);
  if (!found) throw meteringErrors.modelNotFound(id);
  return found;
}

function anthropicList(c: Context<AppEnv>, visible: VisibleModel[], config: Config) {
  const query = validate(anthropicListQuery, c.req.query());
  const models = anthropicVisible(visible);
  const page =
    query.before_id === undefined
      ? pageAfter(models, query.limit, query.after_id, "after_id")
      : pageBefore(models, query.limit, query.before_id, "before_id");
  const data = page.items.map((m) => anthropicModel(m, config, c.get("apiKey")));
  return c.json({ data, has_more: page.more, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}

export interface ModelRouteDeps {
  catalog: Catalog;
  config: Config;
}

const anthropicVersion = {
  "anthropic-version": "Sent by the Anthropic SDK: the answer is then in Anthropic's shape, and lists only chat models.",
};

export const listModelsRoute = route<ModelRouteDeps>(
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
  ({ catalog, config }) =>
    (c) => {
      const visible = visibleModels(catalog, config, c.get("apiKey"));
      if (isAnthropic(c)) return anthropicList(c, visible, config);
      return c.json({ object: "list", data: visible.map(openAiModel) });
    },
);

export const retrieveModelRoute = route<ModelRouteDeps>(
  {
    method: "get",
    path: "/v1/models/{model}",
    paramPatterns: { model: ".+" },
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
  ({ catalog, config }) =>
    (c) => {
      const visible = visibleModels(catalog, config, c.get("apiKey"));
      const id = c.req.param("model")!;
      if (isAnthropic(c)) return c.json(anthropicModel(visibleModel(anthropicVisible(visible), id), config, c.get("apiKey")));
      return c.json(openAiModel(visibleModel(visible, id)));
    },
);

export const nativeModelListSchema = z.object({
  models: z.array(z.object({ name: z.string(), description: z.string(), release_date: z.string().nullable() })),
});

/** GET {root}/native/v1/models: the evaluation models in the native SDK's shape. */
export const nativeModelsRoute = route<ModelRouteDeps>(
  {
    method: "get",
    path: "/native/v1/models",
    operationId: "listNativeModels",
    summary: "The evaluation models this API key may use, in the native SDK's shape",
    tag: "Evaluation",
    access: "apiKey",
    ok: { status: 200, description: "The list.", schema: ours("NativeModelList", nativeModelListSchema) },
  },
  ({ catalog, config }) =>
    (c) => {
      const list: z.infer<typeof nativeModelListSchema> = {
        models: visibleModels(catalog, config, c.get("apiKey"))
          .filter(({ model }) => model.config.kind === "systemone")
          .map(({ id, model }) => ({ name: id, description: model.config.description, release_date: model.config.release_date ?? null })),
      };
      return c.json(list);
    },
);
