import { Hono } from "hono";
import { z } from "zod";
import type { Catalog } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import { visibleModels } from "../metering/access.js";
import type { AppEnv } from "../server/context.js";

/** GET /v1/models: the chat-completions-style list of exactly the IDs this key may use. */
export function modelListRoutes(catalog: Catalog, config: Config) {
  return new Hono<AppEnv>().get("/models", (c) =>
    c.json({
      object: "list",
      data: visibleModels(catalog, config, c.get("apiKey")).map(({ id, model }) => {
        const entry = { id, object: "model", created: model.created, owned_by: model.config.owned_by };
        return model.config.kind === "systemone" ? Object.assign(entry, { endpoints: ["v1/systemone"] }) : entry;
      }),
    }),
  );
}

export const nativeModelListSchema = z.object({
  models: z.array(z.object({ name: z.string(), description: z.string(), release_date: z.string().nullable() })),
});

/** GET {root}/native/v1/models: the evaluation models in the native SDK's shape. */
export function nativeModelListRoutes(catalog: Catalog, config: Config) {
  return new Hono<AppEnv>().get("/v1/models", (c) => {
    const list: z.infer<typeof nativeModelListSchema> = {
      models: visibleModels(catalog, config, c.get("apiKey"))
        .filter(({ model }) => model.config.kind === "systemone")
        .map(({ id, model }) => ({ name: id, description: model.config.description, release_date: model.config.release_date ?? null })),
    };
    return c.json(list);
  });
}
