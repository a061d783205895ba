import type { Pool } from "../../db/pool.js";
import { inTransaction } from "../../db/transaction.js";
import { changeChannelCase, findChannelCase, insertSourceMessages, upsertChannelCase, type NewSourceMessage } from "./chatplatform-sql.js";
import type { ControlResponse, SnapshotRequest, SnapshotResponse } from "@model-gateway/worker-kit/wire/chat-platform";
import { enqueueJob } from "../worker-jobs/jobs-sql.js";
import { scrubText } from "./scrub.js";

// The chat platform's side of the support workspace (docs/support.md, "Chat platform"). The platform owns the
// conversation and delivers the answers; the gateway keeps a private snapshot of each channel as a case with no
// owner, queues the answers workers write, and tells the platform, just before a delivery, whether staff hold
// the case. Routes (./worker-routes.ts) validate; this module decides.

/** Whether staff hold the channel's case; reads only, so an unknown channel leaves no row. */
export async function channelControl(pool: Pool, sourceRef: string): Promise<ControlResponse> {
  const row = await findChannelCase(pool, sourceRef);
  if (!row) return { staff_hold: false };
  return { staff_hold: row.staff_hold, case_id: row.id, revision: row.revision };
}

/**
 * Upserts the channel's case from a snapshot, in one transaction on the locked case: messages not taken yet are
 * stored scrubbed (those scrubbed to nothing are dropped), a card replaces the case's, `staff_active: true` takes
 * the case over. New user messages bump the revision once and queue one job for the lot: an answer, or a private
 * staff draft while staff are on the case (a hold, or a worker asked for staff), as on a dashboard case. Nothing
 * here clears a hold.
 */
export function upsertSnapshot(pool: Pool, body: SnapshotRequest): Promise<SnapshotResponse> {
  const messages: NewSourceMessage[] = [];
  for (const m of body.messages) {
    const content = scrubText(m.content);
    if (content !== "") messages.push({ id: m.id, role: m.role, content, createdAt: m.created_at ?? null });
  }
  return inTransaction(pool, async (client) => {
    const locked = await upsertChannelCase(client, body.source_ref, body.locale ?? null);
    const inserted = await insertSourceMessages(client, locked.id, messages);
    const userMessage = inserted.includes("user");
    const takeover = body.staff_active === true && !locked.staff_hold;
    const row =
      userMessage || takeover || body.card !== undefined
        ? await changeChannelCase(client, locked.id, { card: body.card ?? null, takeover, userMessage })
        : locked;
    if (userMessage)
      await enqueueJob(client, { caseId: row.id, kind: row.handoff || row.staff_hold ? "staff_draft" : "answer", revision: row.revision });
    return { case_id: row.id, revision: row.revision, staff_hold: row.staff_hold, inserted: inserted.length };
  });
}
