import type { Config, ModelConfig, ProviderConfig } from "../config/schema.js";
import { extended } from "../objects.js";
import type { Catalog, CatalogModel } from "./catalog.js";
import { modelAccessErrors } from "./model-access-errors.js";

/**
 * What model access reads of an API key (src/auth/principals.ts's ApiKeyPrincipal has these fields): the catalog
 * sits below auth, so it names them itself.
 */
export interface ModelAccessKey {
  kind: "inference" | "reseller";
  plan: string;
  /** Public model IDs the key is limited to; null = whatever the plan allows. */
  models: readonly string[] | null;
}

/** Why a key may not use a model: its plan's model list, or the key's own `--models` list; null = allowed. */
function deniedBy(config: Config, key: ModelAccessKey, modelId: string): "plan" | "key" | null {
  const planModels = Object.hasOwn(config.plans, key.plan) ? config.plans[key.plan]!.models : undefined;
  if (planModels && !planModels.includes(modelId)) return "plan";
  if (key.models && !key.models.includes(modelId)) return "key";
  return null;
}

/** A public model ID a key may send, and the model it names. */
export interface VisibleModel {
  id: string;
  model: CatalogModel;
}

/** The IDs a key may use: each allowed model's own, and for reseller keys its reseller aliases too. */
export function visibleModels(catalog: Catalog, config: Config, key: ModelAccessKey): VisibleModel[] {
  return catalog
    .all()
    .filter((m) => deniedBy(config, key, m.id) === null)
    .flatMap((m) => [
      { id: m.id, model: m },
      ...(key.kind === "reseller" ? m.config.reseller_aliases.map((alias) => ({ id: alias, model: m })) : []),
    ]);
}

/**
 * The model a request names (a reseller key may also name a reseller alias; plan and key lists name models by
 * their own ID): 404 unknown, 400 wrong kind for the route, 403 not allowed for this key.
 */
export function resolveModel(
  catalog: Catalog,
  config: Config,
  key: ModelAccessKey,
  modelId: string,
  kind: ModelConfig["kind"],
): CatalogModel {
  const model = catalog.get(modelId) ?? (key.kind === "reseller" ? catalog.resellerAlias(modelId) : undefined);
  if (!model) throw modelAccessErrors.modelNotFound(modelId);
  const denied = deniedBy(config, key, model.id);
  if (denied) throw modelAccessErrors.modelForbidden(modelId, denied);
  if (model.config.kind !== kind) throw modelAccessErrors.wrongKind(modelId, model.config.kind);
  return model;
}

/**
 * The model with the targets this request may use: those speaking a protocol the route can call (400 when none
 * does); with the client's own upstream key (`byok`), only the targets of the first provider that accepts one
 * (400 when none does). A key is meant for one provider: fallback never carries it to another.
 */
export function servingTargets(
  model: CatalogModel,
  protocols: readonly ProviderConfig["protocol"][],
  route: string,
  byok: boolean,
): CatalogModel {
  const fits = (t: CatalogModel["targets"][number]) => protocols.includes(t.provider.protocol);
  // The usual case, on every request: nothing to leave out, nothing allocated.
  if (!byok && model.targets.every(fits)) return model;
  let targets = model.targets.filter(fits);
  if (targets.length === 0) throw modelAccessErrors.notServedHere(model.id, model.targets[0]!.provider.protocol, route);
  if (byok) {
    const pinned = targets.find((t) => t.provider.allow_byok)?.providerId;
    if (pinned === undefined) throw modelAccessErrors.upstreamKeyNotAccepted(model.id);
    targets = targets.filter((t) => t.providerId === pinned);
  }
  return targets.length === model.targets.length ? model : extended(model, { targets });
}
