import { Hono } from "hono";
import type { Catalog } from "../catalog/catalog.js";
import type { ApiKeyPrincipal, AppEnv } from "../server/context.js";

function visibleTo(catalog: Catalog, key: ApiKeyPrincipal) {
  const allowed = key.models ? new Set(key.models) : null;
  return catalog.all().filter((m) => !allowed || allowed.has(m.id));
}

/** GET /v1/models: the chat-completions-style list of exactly the IDs this key may use. */
export function modelListRoutes(catalog: Catalog) {
  return new Hono<AppEnv>().get("/models", (c) =>
    c.json({
      object: "list",
      data: visibleTo(catalog, c.get("apiKey")).map((m) => ({
        id: m.id,
        object: "model",
        created: m.created,
        owned_by: m.config.owned_by,
        ...(m.config.kind === "systemone" ? { endpoints: ["v1/systemone"] } : {}),
      })),
    }),
  );
}

/** GET {root}/native/v1/models: the evaluation models in the native SDK's shape. */
export function nativeModelListRoutes(catalog: Catalog) {
  return new Hono<AppEnv>().get("/v1/models", (c) =>
    c.json({
      models: visibleTo(catalog, c.get("apiKey"))
        .filter((m) => m.config.kind === "systemone")
        .map((m) => ({ name: m.id, description: m.config.description, release_date: m.config.release_date ?? null })),
    }),
  );
}
