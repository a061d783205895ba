import { Hono } from "hono";
import type { RequestRead } from "../../db/faults.js";
import type { Pool } from "../../db/pool.js";
import type { ErrorCode } from "../../errors.js";
import { ours, type OperationDescription } from "../../server/api-description.js";
import { readValidJson, validate } from "../../server/body.js";
import type { BodyCaps } from "../../server/body-rules.js";
import type { AppEnv } from "../../server/context.js";
import { changeAsStaff, draftAsStaff, listStaffCases, replyAsStaff, staffCaseDetail } from "./staff.js";
import {
  draftBody,
  draftResultSchema,
  staffCaseDetailSchema,
  staffCasePageSchema,
  staffCaseResultSchema,
  staffReplyBody,
  staffReplyResultSchema,
} from "./staff-wire.js";
import { listQuery } from "../cases/user-wire.js";

// The staff side of the support workspace, mounted under /api/v1/assistant (an admin session, and its CSRF
// token on every POST: app.ts). Thin: validate, call ./staff.ts, answer. The actor is the admin's user id.

export interface SupportStaffDeps {
  pool: Pool;
  read: RequestRead;
  bodies: BodyCaps;
}

const CHANGES = ["takeover", "resume", "resolve"] as const;
const DRAFTS = { "operator-draft": "operator", "bug-draft": "bug" } as const;

export function supportStaffRoutes(deps: SupportStaffDeps) {
  const { pool, read, bodies } = deps;
  const actor = (userId: string) => `admin:${userId}`;
  const app = new Hono<AppEnv>()
    .get("/cases", async (c) => c.json(await read(() => listStaffCases(pool, validate(listQuery, c.req.query())))))
    .get("/cases/:id", async (c) => c.json(await read(() => staffCaseDetail(pool, c.req.param("id")))))
    .post("/cases/:id/messages", async (c) => {
      const body = await readValidJson(c, staffReplyBody, bodies.large);
      return c.json(await replyAsStaff(pool, c.req.param("id"), body.content, actor(c.get("session").userId)), 201);
    });
  for (const change of CHANGES) {
    app.post(`/cases/:id/${change}`, async (c) =>
      c.json(await changeAsStaff(pool, c.req.param("id"), change, actor(c.get("session").userId))),
    );
  }
  for (const [path, kind] of Object.entries(DRAFTS)) {
    app.post(`/cases/:id/${path}`, async (c) => {
      const body = await readValidJson(c, draftBody, bodies.large);
      const result = await draftAsStaff(pool, c.req.param("id"), kind, body.content, actor(c.get("session").userId));
      return c.json(result, result.draft ? 201 : 202);
    });
  }
  return app;
}

const caseParam = { id: "The case's ID." };
const result = ours("SupportStaffCaseResult", staffCaseResultSchema);
const notFound: ErrorCode[] = ["not_found"];

const CHANGE_SUMMARIES: Record<(typeof CHANGES)[number], string> = {
  takeover: "Takes the case over: a staff hold (no automatic answer publishes; it survives chat-platform snapshots) and a new revision",
  resume: "Lifts the staff hold: automatic answers may publish again",
  resolve: "Resolves the case (a new revision: answers in flight are discarded)",
};

export const supportStaffOperations: OperationDescription[] = [
  {
    method: "get",
    path: "/api/v1/assistant/cases",
    operationId: "listStaffSupportCases",
    summary: "Every support case, newest first, with its owner and channel",
    tag: "Support staff",
    access: "admin",
    query: listQuery,
    ok: { status: 200, description: "One page of cases.", schema: ours("SupportStaffCasePage", staffCasePageSchema) },
    errors: ["invalid_cursor"],
  },
  {
    method: "get",
    path: "/api/v1/assistant/cases/{id}",
    operationId: "getStaffSupportCase",
    summary: "A case with its private drafts, jobs, usage and transcript",
    tag: "Support staff",
    access: "admin",
    pathParams: caseParam,
    ok: { status: 200, description: "The case.", schema: ours("SupportStaffCaseDetail", staffCaseDetailSchema) },
    errors: notFound,
  },
  {
    method: "post",
    path: "/api/v1/assistant/cases/{id}/messages",
    operationId: "replyToSupportCase",
    summary: "A reviewed staff reply in the transcript (dashboard cases only: a chat-platform case answers 409)",
    tag: "Support staff",
    access: "admin",
    pathParams: caseParam,
    body: ours("SupportStaffReply", staffReplyBody),
    ok: { status: 201, description: "The reply and the case.", schema: ours("SupportStaffReplyResult", staffReplyResultSchema) },
    errors: ["not_found", "conflict"],
  },
  ...CHANGES.map((change): OperationDescription => ({
    method: "post",
    path: `/api/v1/assistant/cases/{id}/${change}`,
    operationId: `${change}StaffSupportCase`,
    summary: CHANGE_SUMMARIES[change],
    tag: "Support staff",
    access: "admin",
    pathParams: caseParam,
    ok: { status: 200, description: "The case as it now is.", schema: result },
    errors: notFound,
  })),
  ...Object.entries(DRAFTS).map(([path, kind]): OperationDescription => ({
    method: "post",
    path: `/api/v1/assistant/cases/{id}/${path}`,
    operationId: `${kind}DraftForSupportCase`,
    summary: `A private ${kind} draft: \`{}\` queues its generation by a worker (202), \`{content}\` saves a reviewed one (201); nothing is published`,
    tag: "Support staff",
    access: "admin",
    pathParams: caseParam,
    body: ours("SupportDraftBody", draftBody),
    ok: { status: 201, description: "The saved draft.", schema: ours("SupportDraftResult", draftResultSchema) },
    otherResponses: [{ status: 202, description: "The generation job queued.", schema: ours("SupportDraftResult", draftResultSchema) }],
    errors: notFound,
  })),
];
