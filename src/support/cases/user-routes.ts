import type { RequestRead } from "../../db/faults.js";
import type { Config } from "../../config/schema.js";
import type { Pool } from "../../db/pool.js";
import type { ErrorCode } from "../../errors.js";
import { ours } from "../../openapi/operation.js";
import { readValidJson, validate } from "../../server/body.js";
import type { BodyCaps } from "../../server/body-rules.js";
import { route } from "../../server/route.js";
import { caseDetail, createCase, handoffCase, listCases, postMessage, reopenCase, resolveCase, retryCase } from "./cases.js";
import {
  createCaseBody,
  listQuery,
  messageBody,
  userCaseDetailSchema,
  userCasePageSchema,
  userCaseResultSchema,
  userMessageResultSchema,
} from "@model-gateway/worker-kit/wire/user-cases";

// The user side of the support workspace, under /api/v1/user/assistant (session auth:
// src/runtime/credential-checks.ts). Thin: validate, call ./cases.ts, answer. The caller owns the case or gets 404.

export interface SupportUserDeps {
  pool: Pool;
  /** The request log's database, where a case's request is looked up (analytics.database_url, else the main one). */
  logPool: Pool;
  read: RequestRead;
  bodies: BodyCaps;
  config: Pick<Config, "retention" | "media">;
}

const ACTIONS = { resolve: resolveCase, reopen: reopenCase, handoff: handoffCase, retry: retryCase } as const;

const caseParam = { id: "The case's ID." };
const result = ours("SupportUserCaseResult", userCaseResultSchema);
const notFound: ErrorCode[] = ["not_found"];
const conflict: ErrorCode[] = ["not_found", "conflict"];

const ACTION_DESCRIPTIONS: Record<keyof typeof ACTIONS, { summary: string; ok: string; errors: ErrorCode[] }> = {
  resolve: {
    summary: "Resolves the case (bumps its revision; an answer in flight is discarded)",
    ok: "The resolved case.",
    errors: notFound,
  },
  reopen: {
    summary: "Opens a resolved case again (409 when another case is open for the same request)",
    ok: "The open case.",
    errors: conflict,
  },
  handoff: {
    summary: "Asks for staff: later messages queue private staff drafts instead of automatic answers",
    ok: "The case, handed off.",
    errors: conflict,
  },
  retry: { summary: "Queues a new answer when the case's latest answer job failed (409 otherwise)", ok: "The case.", errors: conflict },
};

const list = route<SupportUserDeps>(
  {
    method: "get",
    path: "/api/v1/user/assistant/cases",
    operationId: "listSupportCases",
    summary: "The session user's own support cases, newest first",
    tag: "Support",
    access: "session",
    query: listQuery,
    ok: { status: 200, description: "One page of cases.", schema: ours("SupportUserCasePage", userCasePageSchema) },
    errors: ["invalid_cursor"],
  },
  ({ pool, read }) =>
    async (c) => {
      const query = validate(listQuery, c.req.query());
      return c.json(await read(() => listCases(pool, c.get("session").userId, query)));
    },
);

const create = route<SupportUserDeps>(
  {
    method: "post",
    path: "/api/v1/user/assistant/cases",
    operationId: "createSupportCase",
    summary: "Opens a case about one of the user's own requests, or reuses the open case for it",
    description:
      "201 with a new case; 200 with the open case of the same request, reused (a question is then added as its next message). 404 when the request is not in the user's request log, whether it is someone else's or not logged yet (retry shortly).",
    tag: "Support",
    access: "session",
    body: ours("SupportCreateCase", createCaseBody),
    ok: { status: 201, description: "The new case.", schema: result },
    otherResponses: [{ status: 200, description: "The open case of the same request, reused.", schema: result }],
    errors: notFound,
  },
  ({ pool, logPool, bodies, config }) =>
    async (c) => {
      const body = await readValidJson(c, createCaseBody, bodies.large);
      const logged = {
        retentionDays: config.retention.request_log_days,
        // The longest a request takes to resolve: a video job, whose row is written when it ends.
        resolveMs: config.media.video.hold_expiry_seconds * 1000,
      };
      const { result, created } = await createCase({ pool, logPool }, c.get("session").userId, body, logged);
      return c.json(result, created ? 201 : 200);
    },
);

const detail = route<SupportUserDeps>(
  {
    method: "get",
    path: "/api/v1/user/assistant/cases/{id}",
    operationId: "getSupportCase",
    summary: "A case: the latest transcript, the request facts, the card, evidence and usage",
    tag: "Support",
    access: "session",
    pathParams: caseParam,
    ok: { status: 200, description: "The case.", schema: ours("SupportUserCaseDetail", userCaseDetailSchema) },
    errors: notFound,
  },
  ({ pool, read }) =>
    async (c) =>
      c.json(await read(() => caseDetail(pool, c.get("session").userId, c.req.param("id")!))),
);

const message = route<SupportUserDeps>(
  {
    method: "post",
    path: "/api/v1/user/assistant/cases/{id}/messages",
    operationId: "postSupportMessage",
    summary: "Adds a user message and queues its answer (a private staff draft during handoff); 409 on a resolved case",
    tag: "Support",
    access: "session",
    pathParams: caseParam,
    body: ours("SupportUserMessage", messageBody),
    ok: { status: 201, description: "The message and the case.", schema: ours("SupportUserMessageResult", userMessageResultSchema) },
    errors: conflict,
  },
  ({ pool, bodies }) =>
    async (c) => {
      const body = await readValidJson(c, messageBody, bodies.large);
      return c.json(await postMessage(pool, c.get("session").userId, c.req.param("id")!, body.content), 201);
    },
);

const actions = Object.entries(ACTION_DESCRIPTIONS).map(([name, d]) =>
  route<SupportUserDeps>(
    {
      method: "post",
      path: `/api/v1/user/assistant/cases/{id}/${name}`,
      operationId: `${name}SupportCase`,
      summary: d.summary,
      tag: "Support",
      access: "session",
      pathParams: caseParam,
      ok: { status: 200, description: d.ok, schema: result },
      errors: d.errors,
    },
    ({ pool }) => {
      const action = ACTIONS[name as keyof typeof ACTIONS];
      return async (c) => c.json(await action(pool, c.get("session").userId, c.req.param("id")!));
    },
  ),
);

/** The user's own cases: the caller owns the case or gets 404. */
export const supportUserRoutes = [list, create, detail, message, ...actions];
