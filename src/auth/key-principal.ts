import type { ApiKeyPrincipal } from "./principals.js";

// A live API key as the requests it authenticates see it: read by its secret's hash (key-authenticator.ts) or
// by its id (embed-tokens.ts), with the same columns and the same principal.

export interface KeyRow {
  id: string;
  user_id: string;
  kind: "inference" | "reseller";
  models: string[] | null;
  pricing_group: string;
  plan: string;
  plan_revision: number;
}

/**
 * A named statement (parsed and planned once per pooled connection) reading a key that is not revoked and whose
 * user is not disabled, with its user's plan; `$1` is what `column` is compared with.
 */
export const keyLookup = (name: string, column: "secret_hash" | "id") => ({
  name,
  text: `select k.id, k.user_id, k.kind, k.models, k.pricing_group, u.plan, u.plan_revision
           from api_keys k join users u on u.id = k.user_id
          where k.${column} = $1 and k.revoked_at is null and u.disabled_at is null`,
});

export const toKeyPrincipal = (row: KeyRow): ApiKeyPrincipal => ({
  keyId: row.id,
  userId: row.user_id,
  kind: row.kind,
  plan: row.plan,
  planRevision: row.plan_revision,
  models: row.models,
  pricingGroup: row.pricing_group,
});
