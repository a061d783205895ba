import type { DrizzleTransaction } from "../db/transaction.js";
import { asc, eq, sql } from "drizzle-orm";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import { isPricingGroupName } from "../config/plans-schema.js";
import type { Config } from "../config/schema.js";
import { errors } from "../errors.js";
import { generateApiKey } from "./api-key-secret.js";
import { notifyKey as notify } from "./key-notify.js";
import { apiKeys } from "./schema.js";
import type { ApiKeyService, CreateKeyInput, PublicApiKey, UserService } from "./types.js";
import { isUuid } from "../ids.js";
import { driverError } from "./users.js";
import { extended } from "../objects.js";

const MAX_NAME = 200;

type KeyRow = typeof apiKeys.$inferSelect;

function toPublicKey(row: KeyRow): PublicApiKey {
  return {
    id: row.id,
    user_id: row.userId,
    name: row.name,
    kind: row.kind,
    prefix: row.prefix,
    models: row.models,
    pricing_group: row.pricingGroup,
    created_at: row.createdAt.toISOString(),
    revoked_at: row.revokedAt?.toISOString() ?? null,
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
  };
}

function checkModels(models: unknown, config: Config): string[] | null {
  if (models === undefined || models === null) return null;
  if (!Array.isArray(models) || models.length === 0) {
    throw errors.badRequest("models must be a non-empty list of model IDs (omit it to allow every model).", "models");
  }
  if (!models.every((m): m is string => typeof m === "string" && m.trim() !== "")) {
    throw errors.badRequest("models must contain only non-empty model IDs.", "models");
  }
  const unique = [...new Set(models.map((m) => m.trim()))];
  const unknown = unique.filter((m) => !Object.hasOwn(config.models, m));
  if (unknown.length > 0) throw errors.badRequest(`unknown model IDs: ${unknown.join(", ")}.`, "models");
  return unique;
}

export interface ApiKeyServiceDeps {
  db: NodePgDatabase;
  transaction: DrizzleTransaction;
  config: Config;
  users: UserService;
  /** Called after a key changes, for this process's own cache; other processes learn through NOTIFY. */
  onChanged: (secretHash: string) => void;
}

export function createApiKeyService({ db, transaction, config, users, onChanged }: ApiKeyServiceDeps): ApiKeyService {
  const userIdOf = async (idOrEmail: string): Promise<string> => (await users.get(idOrEmail)).id;

  async function create(input: CreateKeyInput): Promise<PublicApiKey & { key: string }> {
    const kind = input.kind ?? "inference";
    if (kind !== "inference" && kind !== "reseller") throw errors.badRequest('kind must be "inference" or "reseller".', "kind");
    const name = input.name ?? "";
    if (typeof name !== "string" || name.length > MAX_NAME) {
      throw errors.badRequest(`name must be a string of at most ${MAX_NAME} characters.`, "name");
    }
    const models = checkModels(input.models, config);
    const pricingGroup = input.pricing_group ?? "default";
    if (typeof pricingGroup !== "string" || !isPricingGroupName(pricingGroup) || !Object.hasOwn(config.pricing_groups, pricingGroup)) {
      throw errors.badRequest(
        `unknown pricing group; configured groups: ${Object.keys(config.pricing_groups).join(", ")}.`,
        "pricing_group",
      );
    }
    const userId = await userIdOf(input.user);
    const secret = generateApiKey();
    try {
      const row = await transaction(async (tx) => {
        const [inserted] = await tx
          .insert(apiKeys)
          .values({ userId, name, kind, secretHash: secret.hash, prefix: secret.prefix, models, pricingGroup })
          .returning();
        await notify(tx, secret.hash);
        return inserted!;
      });
      return extended(toPublicKey(row), { key: secret.key });
    } catch (err) {
      throw driverError(err);
    }
  }

  async function list(filter?: { user?: string }): Promise<PublicApiKey[]> {
    const userId = filter?.user ? await userIdOf(filter.user) : undefined;
    const rows = await db
      .select()
      .from(apiKeys)
      .where(userId ? eq(apiKeys.userId, userId) : undefined)
      .orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
    return rows.map(toPublicKey);
  }

  async function revoke(id: string): Promise<PublicApiKey> {
    // Not echoed: an operator may paste the key's secret here by mistake.
    if (!isUuid(id)) throw errors.notFound("no such key; key ids are UUIDs (the secret is not accepted here).", "key_not_found");
    const row = await transaction(async (tx) => {
      // coalesce keeps the first revocation time, so revoking twice is harmless and reports the original.
      const [updated] = await tx
        .update(apiKeys)
        .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` })
        .where(eq(apiKeys.id, id))
        .returning();
      if (updated) await notify(tx, updated.secretHash);
      return updated;
    });
    if (!row) throw errors.notFound(`no key ${id}`, "key_not_found");
    onChanged(row.secretHash);
    return toPublicKey(row);
  }

  return { create, list, revoke };
}
