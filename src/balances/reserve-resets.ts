import { randomUUID } from "node:crypto";
import type pg from "pg";
import { z } from "zod";
import type { UserService } from "../auth/types.js";
import type { Config } from "../config/schema.js";
import type { Pool, Queryable } from "../db/pool.js";
import { errors, GatewayError } from "../errors.js";
import type { Clock } from "../time/clock.js";
import type { QuotaLedger, ResetBalance } from "../quota/types.js";
import { nextWeekAt } from "../time/week.js";
import type { Idempotency, Keyed } from "./idempotency.js";

// Reserve resets (docs/billing.md, "Reserve resets"): a user reads their own, sets whether resets are used
// automatically, and uses one by hand; operators grant gifted ones (`gateway resets grant`, or the admin endpoint
// with CSRF) and read anyone's. The balances and every grant and use are the ledger's (src/quota/resets-sql.ts);
// the flag is a column of the user, so no renewal touches it. A use and a grant are idempotent by the caller's key,
// scoped to the user whose resets they move (idempotency.ts): each runs, and reads its answer, in the transaction
// that records the key.

const when = z.iso.datetime();

export const resetUseSchema = z.object({
  id: z.string().meta({ description: "The use's id (also the reference of its restoration)." }),
  kind: z.enum(["weekly", "gifted"]).meta({ description: "Which reset was used: one of the week's, or a gifted one." }),
  day: z.string().meta({ description: "The UTC day (YYYY-MM-DD) whose allowance it restored." }),
  restored: z.int().meta({ description: "Quota units it restored: what had been spent that day and not yet restored." }),
  trigger: z.enum(["manual", "automatic"]),
  created_at: when,
});

export const resetGrantSchema = z.object({
  id: z.string(),
  count: z.int(),
  expires_at: when.nullable().meta({ description: "When the gifted resets expire; null: never." }),
  note: z.string(),
  granted_by: z.string().meta({ description: "`admin:<user id>` for a grant through the API, `cli` for the command." }),
  created_at: when,
});

export const quotaResetsSchema = z.object({
  user_id: z.string(),
  plan: z.string(),
  auto_reset_enabled: z.boolean(),
  week: z.string().meta({ description: "The ISO week in UTC (YYYY-Www) the weekly resets belong to." }),
  weekly_allowance: z.int().meta({ description: "The plan's weekly resets." }),
  weekly_left: z.int().meta({ description: "This week's resets not used yet." }),
  weekly_renews_at: when.meta({ description: "When the weekly allowance next renews (Monday 00:00 UTC)." }),
  gifted_left: z.int().meta({ description: "Gifted resets left, unexpired." }),
  gifts: z
    .array(z.object({ count: z.int(), expires_at: when.nullable() }))
    .meta({ description: "Gifted resets left by expiry, the soonest first (null: never expires, last)." }),
  grants: z.array(resetGrantSchema).meta({ description: "The latest 50 grants, newest first." }),
  uses: z.array(resetUseSchema).meta({ description: "The latest 50 uses, newest first." }),
});

export const resetUsedSchema = z.object({ use: resetUseSchema, quota_resets: quotaResetsSchema });

export type PublicQuotaResets = z.infer<typeof quotaResetsSchema>;
export type PublicResetUse = z.infer<typeof resetUseSchema>;

export interface GrantInput {
  count: number;
  /** YYYY-MM-DD (valid through that UTC day) or an ISO 8601 instant; absent: the gift never expires. */
  expires?: string;
  note?: string;
}

export interface ReserveResets {
  /** By user id (the session's) or, for operators, id or email. */
  state(user: string): Promise<PublicQuotaResets>;
  setAuto(userId: string, enabled: boolean): Promise<boolean>;
  /** The same `key` again answers the first use (or its refusal) and uses nothing. */
  use(userId: string, key?: string): Promise<Keyed<z.infer<typeof resetUsedSchema>>>;
  /** The same `key` and input again answers the first grant's resets and grants nothing (whoever grants). */
  grant(user: string, input: GrantInput, grantedBy: string, key?: string): Promise<Keyed<PublicQuotaResets>>;
}

const MAX_NOTE = 500;
const MAX_GRANT = 1000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const instant = z.iso.datetime({ offset: true });
const DAY_MS = 86_400_000;

/** The instant a gift stops being usable: a bare date means through that UTC day. Null when the text is no date. */
export function parseExpiry(text: string): Date | null {
  const date = DATE.test(text) ? new Date(`${text}T00:00:00.000Z`) : instant.safeParse(text).success ? new Date(text) : null;
  if (!date || Number.isNaN(date.getTime())) return null;
  if (DATE.test(text)) {
    // Date.parse rolls 2026-02-30 over to March: refuse it instead.
    if (date.toISOString().slice(0, 10) !== text) return null;
    return new Date(date.getTime() + DAY_MS);
  }
  return date;
}

const FLAG = `select plan, plan_revision, auto_reset_enabled from users where id = $1::uuid`;
const SET_FLAG = `update users set auto_reset_enabled = $2::bool where id = $1::uuid returning auto_reset_enabled`;

/** What the reserve resets' operations take (createReserveResets' deps). */
interface ResetsDeps {
  ledger: QuotaLedger;
  pool: Pool;
  users: UserService;
  config: Config;
  clock: Clock;
  idempotency: Idempotency;
}

const planOf = (deps: ResetsDeps, plan: string) => (Object.hasOwn(deps.config.plans, plan) ? deps.config.plans[plan] : undefined);

const userIdOf = async (deps: ResetsDeps, idOrEmail: string): Promise<string> => (await deps.users.get(idOrEmail)).id;

async function account(userId: string, q: Queryable): Promise<{ plan: string; planRevision: number; auto: boolean }> {
  const row = (await q.query<{ plan: string; plan_revision: number; auto_reset_enabled: boolean }>(FLAG, [userId])).rows[0];
  if (!row) throw errors.notFound(`no user ${userId}`, "user_not_found");
  return { plan: row.plan, planRevision: row.plan_revision, auto: row.auto_reset_enabled };
}

const toUse = (u: ResetBalance["uses"][number]): PublicResetUse => ({
  id: u.id,
  kind: u.kind,
  day: u.day,
  restored: Number(u.restored),
  trigger: u.trigger,
  created_at: u.createdAt.toISOString(),
});

/** On `client`, inside the transaction that just changed them. */
async function stateOf(deps: ResetsDeps, userId: string, client?: pg.PoolClient): Promise<PublicQuotaResets> {
  const { plan, auto } = await account(userId, client ?? deps.pool);
  const b = await deps.ledger.resets(userId, BigInt(planOf(deps, plan)?.weekly_resets ?? 0), client);
  let gifted = 0;
  for (const g of b.gifts) gifted += Number(g.left);
  return {
    user_id: userId,
    plan,
    auto_reset_enabled: auto,
    week: b.week,
    weekly_allowance: Number(b.weeklyAllowance),
    weekly_left: Number(b.weeklyLeft),
    weekly_renews_at: b.weeklyRenewsAt.toISOString(),
    gifted_left: gifted,
    gifts: b.gifts.map((g) => ({ count: Number(g.left), expires_at: g.expiresAt?.toISOString() ?? null })),
    grants: b.grants.map((g) => ({
      id: g.id,
      count: g.count,
      expires_at: g.expiresAt?.toISOString() ?? null,
      note: g.note,
      granted_by: g.grantedBy,
      created_at: g.createdAt.toISOString(),
    })),
    uses: b.uses.map(toUse),
  };
}

/** ReserveResets.use: one manual use, idempotent by `key`. */
function useByHand(deps: ResetsDeps, userId: string, key: string | undefined): Promise<Keyed<z.infer<typeof resetUsedSchema>>> {
  // One id for every attempt of the call: the ledger's use is idempotent by it too.
  const id = randomUUID();
  return deps.idempotency.run({
    operation: "reset_use",
    ownerId: userId,
    key,
    request: {},
    status: 200,
    work: async (client) => {
      const { plan, planRevision } = await account(userId, client);
      const terms = planOf(deps, plan);
      const weeklyBase = BigInt(terms?.weekly_resets ?? 0);
      const dailyBase = BigInt(terms?.daily_tokens ?? 0);
      const input = { userId, id, dailyBase, weeklyBase, planRevision, trigger: "manual" as const };
      const used = await deps.ledger.useReset(input, client);
      if (used.outcome === "nothing_spent") {
        throw errors.conflict("Nothing was spent today: the daily allowance is whole, so no reset was used.", "nothing_to_restore");
      }
      if (used.outcome === "none_available") {
        const now = deps.clock.now();
        const renews = nextWeekAt(now);
        throw new GatewayError({
          code: "insufficient_quota",
          message: `No reserve reset available: this week's ${weeklyBase} are used and no gifted reset is left; the weekly resets renew at ${renews.toISOString()} (Monday 00:00 UTC).`,
          headers: { "Retry-After": String(Math.max(1, Math.ceil((renews.getTime() - now.getTime()) / 1000))) },
        });
      }
      return {
        use: {
          id,
          kind: used.kind,
          day: used.day,
          restored: Number(used.restored),
          trigger: "manual" as const,
          created_at: used.createdAt.toISOString(),
        },
        quota_resets: await stateOf(deps, userId, client),
      };
    },
  });
}

/** ReserveResets.grant: gifted resets, idempotent by `key` and the input. */
async function grantGifts(
  deps: ResetsDeps,
  user: string,
  input: GrantInput,
  grantedBy: string,
  key: string | undefined,
): Promise<Keyed<PublicQuotaResets>> {
  if (!Number.isSafeInteger(input.count) || input.count < 1 || input.count > MAX_GRANT) {
    throw errors.badRequest(`count must be a whole number from 1 to ${MAX_GRANT}.`, "count", "invalid_value");
  }
  const note = input.note ?? "";
  if (note.length > MAX_NOTE) throw errors.badRequest(`note must be at most ${MAX_NOTE} characters.`, "note", "invalid_value");
  let expiresAt: Date | null = null;
  if (input.expires !== undefined) {
    expiresAt = parseExpiry(input.expires);
    if (!expiresAt) {
      throw errors.badRequest(
        "expires must be a date (YYYY-MM-DD, valid through that UTC day) or an ISO 8601 instant.",
        "expires",
        "invalid_value",
      );
    }
  }
  const userId = await userIdOf(deps, user);
  return deps.idempotency.run({
    operation: "reset_grant",
    ownerId: userId,
    key,
    // Who grants is not part of it: an operator may retry through the CLI what the API did not confirm.
    request: { count: input.count, expires_at: expiresAt?.toISOString() ?? null, note },
    status: 201,
    work: async (client) => {
      // Checked when the grant is made, not when it is replayed: a replay after the expiry still answers it.
      // A 400 is no refusal to store, so the key stays free for a corrected grant.
      if (expiresAt && expiresAt.getTime() <= deps.clock.now().getTime())
        throw errors.badRequest("expires must be in the future.", "expires", "invalid_value");
      await deps.ledger.grantResets({ userId, count: input.count, expiresAt, note, grantedBy }, client);
      return stateOf(deps, userId, client);
    },
  });
}

export function createReserveResets(deps: ResetsDeps): ReserveResets {
  return {
    state: async (user) => stateOf(deps, await userIdOf(deps, user)),

    async setAuto(userId, enabled) {
      const row = (await deps.pool.query<{ auto_reset_enabled: boolean }>(SET_FLAG, [userId, enabled])).rows[0];
      if (!row) throw errors.notFound(`no user ${userId}`, "user_not_found");
      return row.auto_reset_enabled;
    },

    use: (userId, key) => useByHand(deps, userId, key),
    grant: (user, input, grantedBy, key) => grantGifts(deps, user, input, grantedBy, key),
  };
}
