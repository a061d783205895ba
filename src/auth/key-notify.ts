import { eq, sql } from "drizzle-orm";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import { apiKeys } from "./schema.js";

/** Every process's key cache listens here; the payload is the secret hash to drop. */
export const API_KEY_CHANNEL = "gateway_api_keys";

/** Tells every process's key cache to drop one key, when the caller's transaction commits. */
export const notifyKey = (tx: Pick<NodePgDatabase, "execute">, hash: string) =>
  tx.execute(sql`select pg_notify(${API_KEY_CHANNEL}, ${hash})`);

/**
 * A change to a user that their keys' principals carry (disabled, another plan): every key of the user is
 * NOTIFYed like a revocation, in the caller's transaction, so no process keeps serving the old principal from
 * its cache. Returns the hashes, for this process's own cache.
 */
export async function notifyUserKeys(tx: Pick<NodePgDatabase, "select" | "execute">, userId: string): Promise<string[]> {
  const keys = await tx.select({ hash: apiKeys.secretHash }).from(apiKeys).where(eq(apiKeys.userId, userId));
  for (const { hash } of keys) await notifyKey(tx, hash);
  return keys.map((k) => k.hash);
}
