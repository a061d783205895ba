import { Hono } from "hono";
import { z } from "zod";
import type { Catalog } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import { meteringErrors } from "../metering/metered-errors.js";
import { visibleModels } from "../catalog/model-access.js";
import { validate } from "../server/body.js";
import type { AppEnv } from "../server/context.js";
import { geminiModel, type geminiModelListSchema } from "./model-shapes.js";
import { pageAfter } from "./model-pages.js";
import { pageSizeQuery } from "../server/query-wire.js";

// GET /compatible/v1beta/models and /compatible/v1beta/models/{model}: what @google/genai's `models.list()` and
// `models.get()` call. Only chat models: generateContent is the only method served under /compatible.

export const geminiListQuery = z.object({
  pageSize: pageSizeQuery({ min: 1, max: 1000, fallback: 50 }, "Models per page, 1 to 1000 (default 50)."),
  pageToken: z.string().optional().meta({ description: "The `nextPageToken` of the previous page." }),
});

// The token is the last model ID of the previous page, opaque to clients as Google's are.
const pageToken = (id: string) => Buffer.from(id).toString("base64url");
const afterOf = (token: string | undefined) => (token === undefined ? undefined : Buffer.from(token, "base64url").toString());

/** Mounted under /compatible. */
export function geminiModelRoutes(catalog: Catalog, config: Config) {
  const chatModels = (key: Parameters<typeof visibleModels>[2]) =>
    visibleModels(catalog, config, key).filter(({ model }) => model.config.kind === "chat");
  return (
    new Hono<AppEnv>()
      .get("/v1beta/models", (c) => {
        const query = validate(geminiListQuery, c.req.query());
        const key = c.get("apiKey");
        const page = pageAfter(chatModels(key), query.pageSize, afterOf(query.pageToken), "pageToken");
        const list: z.infer<typeof geminiModelListSchema> = { models: page.items.map((m) => geminiModel(m, config, key)) };
        if (page.more) list.nextPageToken = pageToken(page.items.at(-1)!.id);
        return c.json(list);
      })
      // A name with a `:method` is one of the action routes (generateContent…), whose GET is their 405, not a model.
      .get("/v1beta/models/:model{[^:]+}", (c) => {
        const id = c.req.param("model");
        const key = c.get("apiKey");
        const found = chatModels(key).find((m) => m.id === id);
        if (!found) throw meteringErrors.modelNotFound(id);
        return c.json(geminiModel(found, config, key));
      })
  );
}
