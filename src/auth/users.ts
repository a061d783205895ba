import type { DrizzleTransaction } from "../db/transaction.js";
import { isUuid } from "../ids.js";
import { asc, eq, sql } from "drizzle-orm";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import { z } from "zod";
import type { Config } from "../config/schema.js";
import { errors } from "../errors.js";
import { normaliseEmail } from "./email.js";
import type { PasswordHasher } from "./passwords.js";
import { passwordProblem } from "./password-policy.js";
import { notifyUserKeys } from "./key-notify.js";
import { users } from "./schema.js";
import { extended } from "../objects.js";
import type { AdminUser, CreateUserInput, PublicUser, UserService } from "./types.js";

const emailSchema = z.email();

export type UserRow = typeof users.$inferSelect;

export function toPublicUser(row: Pick<UserRow, "id" | "email" | "role" | "plan" | "createdAt">): PublicUser {
  return { id: row.id, email: row.email, role: row.role, plan: row.plan, created_at: row.createdAt.toISOString() };
}

export function toAdminUser(row: UserRow): AdminUser {
  return extended(toPublicUser(row), { disabled_at: row.disabledAt?.toISOString() ?? null });
}

/** The condition that finds a user by id (a UUID) or by email, however the address is spelled. */
export function userMatching(idOrEmail: string) {
  const needle = idOrEmail.trim();
  return isUuid(needle) ? eq(users.id, needle) : eq(users.email, normaliseEmail(needle));
}

/**
 * drizzle wraps driver errors in an error whose message lists the query parameters (password hashes, key
 * hashes); unwrap to the driver's own error so those never reach a log line.
 */
export function driverError(err: unknown): unknown {
  return err instanceof Error && err.cause instanceof Error ? err.cause : err;
}

const isUniqueViolation = (err: unknown) => (err as { code?: unknown }).code === "23505";

/** `onKeyChanged`: this process's key cache, told of the keys a plan change NOTIFYed. */
export function createUserService(
  db: NodePgDatabase,
  transaction: DrizzleTransaction,
  config: Config,
  hasher: PasswordHasher,
  onKeyChanged: (secretHash: string) => void,
): UserService {
  async function create(input: CreateUserInput): Promise<AdminUser> {
    const email = typeof input.email === "string" ? normaliseEmail(input.email) : "";
    if (!emailSchema.safeParse(email).success) throw errors.badRequest("email must be a valid email address.", "email");
    const password = input.password;
    if (typeof password !== "string") throw errors.badRequest("password must be a string.", "password");
    const problem = passwordProblem(password, config.auth.password_min_length);
    if (problem) throw errors.badRequest(problem, "password");
    const role = input.role ?? "user";
    if (role !== "user" && role !== "admin") throw errors.badRequest('role must be "user" or "admin".', "role");
    const plan = input.plan ?? config.default_plan;
    if (!Object.hasOwn(config.plans, plan)) {
      throw errors.badRequest(`unknown plan "${plan}"; configured plans: ${Object.keys(config.plans).join(", ")}.`, "plan");
    }
    const passwordHash = await hasher.hash(password);
    try {
      const [row] = await db.insert(users).values({ email, passwordHash, role, plan }).returning();
      return toAdminUser(row!);
    } catch (err) {
      const cause = driverError(err);
      // The unique index on the normalised email is the arbiter: a pre-check alone would race with a concurrent create.
      if (isUniqueViolation(cause)) throw errors.conflict(`a user with email ${email} already exists`, "email_taken");
      throw cause;
    }
  }

  async function list(): Promise<AdminUser[]> {
    const rows = await db.select().from(users).orderBy(asc(users.createdAt), asc(users.id));
    return rows.map(toAdminUser);
  }

  async function find(idOrEmail: string): Promise<AdminUser | null> {
    const [row] = await db.select().from(users).where(userMatching(idOrEmail)).limit(1);
    return row ? toAdminUser(row) : null;
  }
  async function get(idOrEmail: string): Promise<AdminUser> {
    const user = await find(idOrEmail);
    if (!user) throw errors.notFound(`no user ${idOrEmail}`, "user_not_found");
    return user;
  }

  // The plan applies at once: sessions read it on every request, keys' cached principals are NOTIFYed away in the
  // same transaction, and the ledger takes the plan's allowance and weekly resets as each reservation states them.
  async function setPlan(idOrEmail: string, plan: string): Promise<AdminUser> {
    if (!Object.hasOwn(config.plans, plan)) {
      throw errors.badRequest(`unknown plan "${plan}"; configured plans: ${Object.keys(config.plans).join(", ")}.`, "plan");
    }
    const changed = await transaction(async (tx) => {
      const [row] = await tx
        .update(users)
        .set({ plan, planRevision: sql`${users.planRevision} + 1` })
        .where(userMatching(idOrEmail))
        .returning();
      return row && { row, hashes: await notifyUserKeys(tx, row.id) };
    });
    if (!changed) throw errors.notFound(`no user ${idOrEmail}`, "user_not_found");
    for (const hash of changed.hashes) onKeyChanged(hash);
    return toAdminUser(changed.row);
  }

  return { create, list, find, get, setPlan };
}
