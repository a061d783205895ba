import type { DrizzleTransaction } from "../db/transaction.js";
import { eq, sql } from "drizzle-orm";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import { errors } from "../errors.js";
import { notifyUserKeys } from "./key-notify.js";
import { sessions, users } from "./schema.js";
import type { AdminUser, UserAccessService } from "./types.js";
import { driverError, toAdminUser, userMatching, type UserRow } from "./users.js";

export interface UserAccessDeps {
  db: NodePgDatabase;
  transaction: DrizzleTransaction;
  /** This process's key cache; other processes learn through the NOTIFY sent in the same transaction. */
  onKeyChanged: (secretHash: string) => void;
}

const notFound = (idOrEmail: string) => errors.notFound(`no user ${idOrEmail}`, "user_not_found");

/**
 * Disabling does not touch the keys' rows: the key lookup and the session check both read `users.disabled_at`
 * (key-principal.ts, sessions.ts), so enabling again restores the keys as they were. What must happen at once
 * is that no process keeps serving a key from its cache: every key of the user is NOTIFYed like a revocation.
 */
export function createUserAccessService({ db, transaction, onKeyChanged }: UserAccessDeps): UserAccessService {
  async function disable(idOrEmail: string): Promise<AdminUser> {
    const { row, hashes } = await transaction(async (tx) => {
      const [updated] = await tx
        .update(users)
        .set({ disabledAt: sql`coalesce(${users.disabledAt}, now())` })
        .where(userMatching(idOrEmail))
        .returning();
      if (!updated) return { row: undefined, hashes: [] };
      await tx
        .update(sessions)
        .set({ revokedAt: sql`now()` })
        .where(sql`${sessions.userId} = ${updated.id} and ${sessions.revokedAt} is null`);
      return { row: updated, hashes: await notifyUserKeys(tx, updated.id) };
    }).catch((err: unknown) => {
      throw driverError(err);
    });
    if (!row) throw notFound(idOrEmail);
    for (const hash of hashes) onKeyChanged(hash);
    return toAdminUser(row);
  }

  async function enable(idOrEmail: string): Promise<AdminUser> {
    const [row] = await db.update(users).set({ disabledAt: null }).where(userMatching(idOrEmail)).returning();
    if (!row) throw notFound(idOrEmail);
    return toAdminUser(row);
  }

  async function remove(idOrEmail: string): Promise<AdminUser> {
    const row: UserRow | undefined = await transaction(async (tx) => {
      const [found] = await tx.select().from(users).where(userMatching(idOrEmail)).limit(1).for("update");
      if (!found) return undefined;
      // Two steps on purpose: a delete cannot be undone, and the disable already ended every session and key.
      if (!found.disabledAt) {
        throw errors.conflict(`user ${found.email} is not disabled; run \`gateway users disable ${found.email}\` first`);
      }
      await tx.delete(users).where(eq(users.id, found.id));
      return found;
    });
    if (!row) throw notFound(idOrEmail);
    return toAdminUser(row);
  }

  return { disable, enable, remove };
}
