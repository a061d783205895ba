import { z } from "zod";
import type { RequestRead } from "../db/faults.js";
import { ours } from "../openapi/operation.js";
import { readValidJson, validate } from "../server/body.js";
import type { BodyCaps } from "../server/body-rules.js";
import { route } from "../server/route.js";
import { pageSizeQuery } from "@model-gateway/worker-kit/wire/query";
import { anyObject, strictly } from "../server/strict-body.js";
import type { Transfers } from "./transfers.js";
import {
  adminTransfersAnswer,
  policyBody,
  policySchema,
  preferencesBody,
  previewAnswer,
  previewBody,
  sendBody,
  transferRecord,
  transfersAnswer,
} from "./wire.js";

// The HTTP face of token transfers (transfers.ts): a user's own under /api/v1/user (session only; the sender is
// the session's user, never a body field), the policy and the latest operations under /api/v1/admin (CSRF on PUT).

const listQuery = z.object({
  limit: pageSizeQuery({ min: 1, max: 100, fallback: 20 }, "Transfers per page, 1 to 100 (default 20)."),
  cursor: z.string().optional().meta({ description: "The `next_cursor` of the previous page." }),
});
const adminQuery = z.object({ user_id: z.string().optional().meta({ description: "Only this user's transfers, sent or received." }) });

const record = ours("TokenTransfer", transferRecord);
const policy = ours("TokenTransferPolicy", policySchema);

export interface TransferRouteDeps {
  transfers: Transfers;
  bodies: BodyCaps;
  read: RequestRead;
}

/** The sender: always the session's user, never a body field. */
const sender = (c: { get(key: "session"): { userId: string; plan: string } }) => {
  const session = c.get("session");
  return { userId: session.userId, plan: session.plan };
};

const list = route<TransferRouteDeps>(
  {
    method: "get",
    path: "/api/v1/user/token-transfers",
    operationId: "listTokenTransfers",
    summary: "The session user's transfer limits and history",
    description:
      "Sending, receiving and service-wide amounts left today (pending transfers counted), and the transfers sent and received, newest first.",
    tag: "Account",
    access: "session",
    query: listQuery,
    ok: { status: 200, description: "Limits and a page of history.", schema: ours("TokenTransfers", transfersAnswer) },
  },
  ({ transfers, read }) =>
    async (c) => {
      const query = validate(listQuery, c.req.query());
      return c.json(await read(() => transfers.list(sender(c), query.cursor, query.limit)));
    },
);

const send = route<TransferRouteDeps>(
  {
    method: "post",
    path: "/api/v1/user/token-transfers",
    operationId: "sendTokenTransfer",
    summary: "Gives part of today's allowance to another user",
    description:
      "The sender is the session's user. 202 with the pending transfer, which the gateway completes right after answering; the same key and payload again answers the transfer as it is now (202 while pending, 200 once completed or refused), never a second effect; the same key with another payload is 422. A request with a key another request is still sending waits for it.",
    tag: "Account",
    access: "session",
    body: ours("TokenTransferSend", sendBody),
    ok: {
      status: 202,
      description: "The transfer, pending (200: the transfer of an earlier send with this key, no longer pending).",
      schema: record,
    },
    otherResponses: [{ status: 200, description: "The transfer of an earlier send with this key, completed or refused.", schema: record }],
    errors: [
      "transfers_disabled",
      "transfer_limit_exceeded",
      "insufficient_transferable",
      "idempotency_key_reused",
      "transfer_rate_limited",
    ],
  },
  ({ transfers, bodies }) =>
    async (c) => {
      const body = strictly(sendBody, await readValidJson(c, anyObject, bodies.small));
      const sent = await transfers.send(sender(c), body);
      return c.json(sent.transfer, sent.pending ? 202 : 200);
    },
);

const preview = route<TransferRouteDeps>(
  {
    method: "post",
    path: "/api/v1/user/token-transfers/preview",
    operationId: "previewTokenTransfer",
    summary: "Confirms the recipient and whether a send would be accepted now, moving nothing",
    description:
      "The recipient as a masked email; an unknown recipient and one who does not accept transfers answer alike (`recipient: null`, `recipient_unavailable`). Counted per user and minute with the sends that name no one who accepts transfers (`transfers.lookups_per_minute`).",
    tag: "Account",
    access: "session",
    body: ours("TokenTransferPreview", previewBody),
    ok: { status: 200, description: "The preview.", schema: ours("TokenTransferPreviewed", previewAnswer) },
    errors: ["transfer_rate_limited"],
  },
  ({ transfers, bodies }) =>
    async (c) => {
      const body = strictly(previewBody, await readValidJson(c, anyObject, bodies.small));
      return c.json(await transfers.preview(sender(c), body));
    },
);

const setPreferences = route<TransferRouteDeps>(
  {
    method: "patch",
    path: "/api/v1/user/token-transfers/preferences",
    operationId: "setTokenTransferPreferences",
    summary: "Whether others may send you tokens",
    tag: "Account",
    access: "session",
    body: ours("TokenTransferPreferences", preferencesBody),
    ok: {
      status: 200,
      description: "The saved preference.",
      schema: ours("TokenTransferPreferencesSaved", z.object({ receive_disabled: z.boolean() })),
    },
  },
  ({ transfers, bodies }) =>
    async (c) => {
      const body = strictly(preferencesBody, await readValidJson(c, anyObject, bodies.small));
      return c.json({ receive_disabled: await transfers.setReceiveDisabled(c.get("session").userId, body.receive_disabled) });
    },
);

const readPolicy = route<TransferRouteDeps>(
  {
    method: "get",
    path: "/api/v1/admin/token-transfers/policy",
    operationId: "adminGetTokenTransferPolicy",
    summary: "The transfer policy and its revision",
    tag: "Admin",
    access: "admin",
    ok: { status: 200, description: "The policy.", schema: policy },
  },
  ({ transfers, read }) =>
    async (c) =>
      c.json(await read(() => transfers.policy())),
);

const savePolicy = route<TransferRouteDeps>(
  {
    method: "put",
    path: "/api/v1/admin/token-transfers/policy",
    operationId: "adminSetTokenTransferPolicy",
    summary: "Saves the transfer policy, if unchanged since the revision it was read at",
    description: "A stale `revision` is 409 `conflict` and changes nothing.",
    tag: "Admin",
    access: "admin",
    body: ours("TokenTransferPolicyChange", policyBody),
    ok: { status: 200, description: "The saved policy, at its new revision.", schema: policy },
    errors: ["conflict"],
  },
  ({ transfers, bodies }) =>
    async (c) => {
      const body = strictly(policyBody, await readValidJson(c, anyObject, bodies.small));
      return c.json(await transfers.savePolicy(body, `admin:${c.get("session").userId}`));
    },
);

const latest = route<TransferRouteDeps>(
  {
    method: "get",
    path: "/api/v1/admin/token-transfers",
    operationId: "adminListTokenTransfers",
    summary: "The latest 100 transfers, of everyone or of one user",
    tag: "Admin",
    access: "admin",
    query: adminQuery,
    ok: { status: 200, description: "The latest 100 transfers, newest first.", schema: ours("AdminTokenTransfers", adminTransfersAnswer) },
  },
  ({ transfers, read }) =>
    async (c) => {
      const query = validate(adminQuery, c.req.query());
      return c.json(await read(() => transfers.latest(query.user_id ?? null)));
    },
);

/** A user's own transfers (session only), the policy and the latest transfers for an admin (CSRF on PUT). */
export const transferRoutes = [list, send, preview, setPreferences, readPolicy, savePolicy, latest];
