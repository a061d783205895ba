import type { Config, ModelConfig } from "../config/schema.js";
import type { Target } from "../providers/types.js";

export interface CatalogModel {
  id: string;
  config: ModelConfig;
  /**
   * Unix seconds: the release date when configured, else when the model first appeared (stored, so the same
   * across restarts: src/catalog/first-seen.ts), else when this catalog was built.
   */
  created: number;
  /** Upstream targets in fallback order, resolved once. */
  targets: Target[];
}

export interface Catalog {
  all(): readonly CatalogModel[];
  get(id: string): CatalogModel | undefined;
  /** The model a reseller alias names (`models.<id>.reseller_aliases`). */
  resellerAlias(alias: string): CatalogModel | undefined;
}

/**
 * Public model IDs → their configuration, resolved once per config load (never per request). `firstSeen`: when
 * each model first appeared, in Unix seconds.
 */
export function createCatalog(config: Config, firstSeen: ReadonlyMap<string, number> = new Map(), now = Date.now()): Catalog {
  const built = Math.floor(now / 1000);
  const models = Object.entries(config.models).map(([id, model]) => ({
    id,
    config: model,
    created: model.release_date ? Math.floor(Date.parse(`${model.release_date}T00:00:00Z`) / 1000) : (firstSeen.get(id) ?? built),
    targets: model.targets.map((target) => {
      const providerId = typeof target === "string" ? target : target.provider;
      const upstreamModel = typeof target === "string" ? model.upstream : (target.model ?? model.upstream);
      return { providerId, provider: config.providers[providerId]!, upstreamModel };
    }),
  }));
  const byId = new Map(models.map((m) => [m.id, m]));
  const byAlias = new Map(models.flatMap((m) => m.config.reseller_aliases.map((alias) => [alias, m] as const)));
  return { all: () => models, get: (id) => byId.get(id), resellerAlias: (alias) => byAlias.get(alias) };
}
