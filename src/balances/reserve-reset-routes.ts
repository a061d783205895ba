import { z } from "zod";
import type { RequestRead } from "../db/faults.js";
import { ours } from "../openapi/operation.js";
import { readValidJson } from "../server/body.js";
import { anyObject, strictly } from "../server/strict-body.js";
import type { BodyCaps } from "../server/body-rules.js";
import { route } from "../server/route.js";
import { idempotencyErrors, idempotencyHeaderDescription, idempotencyKeyOf, keyedJson } from "./idempotency-header.js";
import { quotaResetsSchema, resetUsedSchema, type ReserveResets } from "./reserve-resets.js";

// The HTTP face of the reserve resets (reserve-resets.ts): a user's own under /api/v1/user (session only; an API
// key never authorizes them), anyone's for an admin under /api/v1/admin (CSRF on POST). A use and a grant are
// idempotent by the Idempotency-Key header.

const settingsBody = z.strictObject({
  auto_reset_enabled: z.boolean().meta({ description: "Use a reset automatically when the day's allowance runs low." }),
});
const settingsAnswer = z.object({ auto_reset_enabled: z.boolean() });

const grantBody = z.strictObject({
  count: z.int().meta({ description: "How many resets to give, 1 to 1000." }),
  expires: z
    .string()
    .optional()
    .meta({ description: "A date (YYYY-MM-DD, valid through that UTC day) or an ISO 8601 instant; absent: never expires." }),
  note: z.string().optional().meta({ description: "Why, kept with the grant (at most 500 characters)." }),
});

const resetsRef = ours("QuotaResets", quotaResetsSchema);
const userParam = { user: "The user's ID or email." };

export interface ReserveResetRouteDeps {
  resets: ReserveResets;
  bodies: BodyCaps;
  read: RequestRead;
}

const state = route<ReserveResetRouteDeps>(
  {
    method: "get",
    path: "/api/v1/user/quota-resets",
    operationId: "getQuotaResets",
    summary: "The session user's reserve resets, setting and history",
    description:
      "Weekly resets left this week, gifted resets left by expiry, the plan's weekly allowance, `auto_reset_enabled`, when the weekly allowance renews, and the latest grants and uses.",
    tag: "Account",
    access: "session",
    ok: { status: 200, description: "The reserve resets.", schema: resetsRef },
  },
  ({ resets, read }) =>
    async (c) =>
      c.json(await read(() => resets.state(c.get("session").userId))),
);

const setAuto = route<ReserveResetRouteDeps>(
  {
    method: "put",
    path: "/api/v1/user/quota-resets",
    operationId: "setQuotaResetSettings",
    summary: "Saves whether reserve resets are used automatically",
    description:
      "Spends nothing; the flag outlives every daily and weekly renewal. Any other field is a 400 naming it. With the flag on, the first quota-billed request that finds fewer than 100 units of the day left uses one reset (the week's first, then the gift expiring first) and proceeds on the restored allowance; free models, request packs, reseller pay-as-you-go and read-only requests never do, nor does a request the restored allowance could not hold.",
    tag: "Account",
    access: "session",
    body: ours("QuotaResetSettings", settingsBody),
    ok: { status: 200, description: "The saved flag.", schema: ours("QuotaResetSettingsSaved", settingsAnswer) },
  },
  ({ resets, bodies }) =>
    async (c) => {
      const body = strictly(settingsBody, await readValidJson(c, anyObject, bodies.small));
      return c.json({ auto_reset_enabled: await resets.setAuto(c.get("session").userId, body.auto_reset_enabled) });
    },
);

const use = route<ReserveResetRouteDeps>(
  {
    method: "post",
    path: "/api/v1/user/quota-resets/use",
    operationId: "useQuotaReset",
    summary: "Uses one reserve reset now",
    description:
      "Uses one of the week's resets, else the gifted one that expires first, and restores today's allowance (holds in flight stay held). Nothing spent today: 409 `nothing_to_restore`, no reset used. No reset left: 429 `insufficient_quota`. With an `Idempotency-Key`, either refusal is that key's answer as well: a retry with the key answers it again (without `Retry-After`); try later with a new key.",
    tag: "Account",
    access: "session",
    headers: idempotencyHeaderDescription("use"),
    ok: { status: 200, description: "The use and the resets after it.", schema: ours("QuotaResetUsed", resetUsedSchema) },
    // Without a body, a key cannot come back with another one: no idempotency_key_reused.
    errors: ["nothing_to_restore", "insufficient_quota", "invalid_value"],
  },
  ({ resets }) =>
    async (c) => {
      const key = idempotencyKeyOf(c);
      return keyedJson(c, await resets.use(c.get("session").userId, key));
    },
);

const userState = route<ReserveResetRouteDeps>(
  {
    method: "get",
    path: "/api/v1/admin/users/{user}/quota-resets",
    operationId: "adminGetQuotaResets",
    summary: "A user's reserve resets and history",
    tag: "Admin",
    access: "admin",
    pathParams: userParam,
    ok: { status: 200, description: "The reserve resets.", schema: resetsRef },
    errors: ["user_not_found"],
  },
  ({ resets, read }) =>
    async (c) =>
      c.json(await read(() => resets.state(c.req.param("user")!))),
);

const grant = route<ReserveResetRouteDeps>(
  {
    method: "post",
    path: "/api/v1/admin/users/{user}/quota-resets",
    operationId: "adminGrantQuotaResets",
    summary: "Grants a user gifted reserve resets",
    tag: "Admin",
    access: "admin",
    pathParams: userParam,
    headers: idempotencyHeaderDescription("grant"),
    body: ours("QuotaResetGrant", grantBody),
    ok: {
      status: 201,
      description: "The reserve resets after the grant (a replay: after the first grant with that key).",
      schema: resetsRef,
    },
    errors: ["user_not_found", ...idempotencyErrors],
  },
  ({ resets, bodies }) =>
    async (c) => {
      const key = idempotencyKeyOf(c);
      const body = strictly(grantBody, await readValidJson(c, anyObject, bodies.small));
      return keyedJson(c, await resets.grant(c.req.param("user")!, body, `admin:${c.get("session").userId}`, key));
    },
);

/** A user's own reserve resets (session only), and anyone's for an admin. */
export const reserveResetRoutes = [state, setAuto, use, userState, grant];
