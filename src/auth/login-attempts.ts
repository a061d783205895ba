import { sql } from "drizzle-orm";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import { GatewayError } from "../errors.js";
import { loginAttempts } from "./schema.js";

export interface LoginAttemptLimits {
  maxAttempts: number;
  windowSeconds: number;
}

/**
 * Counts an attempt for the address before its password is checked, in one statement, so processes sharing
 * the database together never check more than `maxAttempts` passwords per address and window; beyond that
 * the attempt is refused without the scrypt work. Unknown addresses are counted alike, so a 429 does not tell
 * which addresses exist.
 */
export async function countLoginAttempt(db: NodePgDatabase, emailKey: string, limits: LoginAttemptLimits): Promise<void> {
  const { maxAttempts, windowSeconds } = limits;
  const { rows } = await db.execute<{ attempts: number; retry_after: number }>(sql`
      insert into login_attempts as a (email_hash, attempts, window_started_at) values (${emailKey}, 1, now())
      on conflict (email_hash) do update set
        attempts = case when a.window_started_at <= now() - make_interval(secs => ${windowSeconds}) then 1 else a.attempts + 1 end,
        window_started_at = case when a.window_started_at <= now() - make_interval(secs => ${windowSeconds}) then now() else a.window_started_at end
      returning attempts, ceil(extract(epoch from a.window_started_at + make_interval(secs => ${windowSeconds}) - now()))::int as retry_after`);
  const row = rows[0]!;
  if (row.attempts <= maxAttempts) return;
  const seconds = Math.max(1, row.retry_after);
  throw new GatewayError({
    message: `Too many login attempts for this email address; try again in ${seconds} seconds.`,
    code: "login_rate_limited",
    headers: { "Retry-After": String(seconds) },
  });
}

/** Deletes the counts whose window ended before `before`; returns how many. */
export async function pruneLoginAttempts(db: NodePgDatabase, before: Date, windowSeconds: number): Promise<number> {
  const result = await db
    .delete(loginAttempts)
    .where(sql`${loginAttempts.windowStartedAt} < ${before.toISOString()}::timestamptz - make_interval(secs => ${windowSeconds})`);
  return result.rowCount ?? 0;
}
