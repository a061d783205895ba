import type { RequestRead } from "../../db/faults.js";
import type { Pool } from "../../db/pool.js";
import type { ErrorCode } from "../../errors.js";
import { ours } from "../../openapi/operation.js";
import { readValidJson, validate } from "../../server/body.js";
import type { BodyCaps } from "../../server/body-rules.js";
import { route } from "../../server/route.js";
import { changeAsStaff, draftAsStaff, listStaffCases, replyAsStaff, staffCaseDetail } from "./staff.js";
import {
  draftBody,
  draftResultSchema,
  staffCaseDetailSchema,
  staffCasePageSchema,
  staffCaseResultSchema,
  staffReplyBody,
  staffReplyResultSchema,
} from "@model-gateway/worker-kit/wire/staff";
import { listQuery } from "@model-gateway/worker-kit/wire/user-cases";

// The staff side of the support workspace, under /api/v1/assistant (an admin session, and its CSRF token on
// every POST: src/runtime/credential-checks.ts). Thin: validate, call ./staff.ts, answer. The actor is the
// admin's user id.

export interface SupportStaffDeps {
  pool: Pool;
  read: RequestRead;
  bodies: BodyCaps;
}

const CHANGES = ["takeover", "resume", "resolve", "reopen"] as const;
const DRAFTS = { "operator-draft": "operator", "bug-draft": "bug" } as const;

/** The actor of a staff change: the admin's user id. */
const actor = (userId: string) => `admin:${userId}`;
const caseParam = { id: "The case's ID, or an unambiguous prefix of it (at least 8 hex digits; several matches: 400 `ambiguous_id`)." };
const result = ours("SupportStaffCaseResult", staffCaseResultSchema);
const notFound: ErrorCode[] = ["not_found", "ambiguous_id"];

const CHANGE_SUMMARIES: Record<(typeof CHANGES)[number], string> = {
  takeover: "Takes the case over: a staff hold (no automatic answer publishes; it survives chat-platform snapshots) and a new revision",
  resume: "Lifts the staff hold: automatic answers may publish again",
  resolve: "Resolves the case (a new revision: answers in flight are discarded)",
  reopen:
    "Opens a resolved case again (a new revision; the staff hold and the handoff stay as they were); 409 `case_not_resolved` for an open case, 409 `conflict` when another case is open for the same request",
};
const CHANGE_ERRORS: Record<(typeof CHANGES)[number], ErrorCode[]> = {
  takeover: notFound,
  resume: notFound,
  resolve: notFound,
  reopen: [...notFound, "case_not_resolved", "conflict"],
};

const list = route<SupportStaffDeps>(
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
  ({ pool, read }) =>
    async (c) =>
      c.json(await read(() => listStaffCases(pool, validate(listQuery, c.req.query())))),
);

const detail = route<SupportStaffDeps>(
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
  ({ pool, read }) =>
    async (c) =>
      c.json(await read(() => staffCaseDetail(pool, c.req.param("id")!))),
);

const reply = route<SupportStaffDeps>(
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
    errors: [...notFound, "conflict"],
  },
  ({ pool, bodies }) =>
    async (c) => {
      const body = await readValidJson(c, staffReplyBody, bodies.large);
      return c.json(await replyAsStaff(pool, c.req.param("id")!, body.content, actor(c.get("session").userId)), 201);
    },
);

const changes = CHANGES.map((change) =>
  route<SupportStaffDeps>(
    {
      method: "post",
      path: `/api/v1/assistant/cases/{id}/${change}`,
      operationId: `${change}StaffSupportCase`,
      summary: CHANGE_SUMMARIES[change],
      tag: "Support staff",
      access: "admin",
      pathParams: caseParam,
      ok: { status: 200, description: "The case as it now is.", schema: result },
      errors: CHANGE_ERRORS[change],
    },
    ({ pool }) =>
      async (c) =>
        c.json(await changeAsStaff(pool, c.req.param("id")!, change, actor(c.get("session").userId))),
  ),
);

const drafts = Object.entries(DRAFTS).map(([path, kind]) =>
  route<SupportStaffDeps>(
    {
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
    },
    ({ pool, bodies }) =>
      async (c) => {
        const body = await readValidJson(c, draftBody, bodies.large);
        const drafted = await draftAsStaff(pool, c.req.param("id")!, kind, body.content, actor(c.get("session").userId));
        return c.json(drafted, drafted.draft ? 201 : 202);
      },
  ),
);

/** The staff side: the queue, a case, replies, takeover, resume, resolve, reopen, private drafts. */
export const supportStaffRoutes = [list, detail, reply, ...changes, ...drafts];
