import type { Config, ModelConfig } from "../config/schema.js";

export interface CatalogModel {
  id: string;
  config: ModelConfig;
  /** Unix seconds: the release date when configured, else when this catalog was built. */
  created: number;
}

export interface Catalog {
  all(): readonly CatalogModel[];
  get(id: string): CatalogModel | undefined;
}

/** Public model IDs → their configuration, resolved once per config load (never per request). */
export function createCatalog(config: Config, now = Date.now()): Catalog {
  const built = Math.floor(now / 1000);
  const models = Object.entries(config.models).map(([id, model]) => ({
    id,
    config: model,
    created: model.release_date ? Math.floor(Date.parse(`${model.release_date}T00:00:00Z`) / 1000) : built,
  }));
  const byId = new Map(models.map((m) => [m.id, m]));
  return { all: () => models, get: (id) => byId.get(id) };
}
