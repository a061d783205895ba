import { CASE_COLUMNS } from "../cases/cases-sql.js";
import type { Queryable } from "../../db/pool.js";
import type { StaffCaseRow } from "../staff/staff-sql.js";
import type { Card } from "@model-gateway/worker-kit/wire/support";

// The chat platform's statements (docs/support.md, "Chat platform"): one case per channel (`source_ref`, a
// unique partial index), never an owner; its messages deduplicated by the platform's message ids (a unique
// (case_id, source_message_id) partial index). The upsert locks the channel's row, so two snapshots of one
// channel run one after the other.

const COLUMNS = `${CASE_COLUMNS}, owner_user_id, source_ref`;

export interface ControlRow {
  id: string;
  revision: number;
  staff_hold: boolean;
}

/** Reads only: an unknown channel finds nothing and leaves nothing. */
export async function findChannelCase(db: Queryable, sourceRef: string): Promise<ControlRow | null> {
  const { rows } = await db.query<ControlRow>({
    name: "support_chatplatform_control",
    text: "select id, revision, staff_hold from support_cases where source_ref = $1",
    values: [sourceRef],
  });
  return rows[0] ?? null;
}

/**
 * The channel's case, created if new (`en` without a locale), locked either way: `do update` takes the row lock
 * on a conflict, where `do nothing` would return no row. A given locale replaces the stored one.
 */
export async function upsertChannelCase(db: Queryable, sourceRef: string, locale: string | null): Promise<StaffCaseRow> {
  const { rows } = await db.query<StaffCaseRow>({
    name: "support_chatplatform_upsert_case",
    text: `insert into support_cases (source_ref, locale) values ($1, coalesce($2, 'en'))
    on conflict (source_ref) where source_ref is not null
    do update set locale = coalesce($2, support_cases.locale)
    returning ${COLUMNS}`,
    values: [sourceRef, locale],
  });
  return rows[0]!;
}

export interface NewSourceMessage {
  id: string;
  role: "user" | "assistant" | "staff";
  content: string;
  createdAt: string | null;
}

/** Inserts the messages not taken yet, in the snapshot's order; returns the roles of those inserted. */
export async function insertSourceMessages(db: Queryable, caseId: string, messages: NewSourceMessage[]): Promise<string[]> {
  if (messages.length === 0) return [];
  const { rows } = await db.query<{ role: string }>({
    name: "support_chatplatform_insert_messages",
    text: `insert into support_messages (case_id, role, content, source_message_id, created_at)
    select $1, m.role, m.content, m.id, coalesce(m.created_at, now())
    from unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) with ordinality as m(id, role, content, created_at, n)
    order by m.n
    on conflict (case_id, source_message_id) where source_message_id is not null do nothing
    returning role`,
    values: [
      caseId,
      messages.map((m) => m.id),
      messages.map((m) => m.role),
      messages.map((m) => m.content),
      messages.map((m) => m.createdAt),
    ],
  });
  return rows.map((r) => r.role);
}

export interface ChannelChange {
  card: Card | null;
  /** Takes the case over: the hold is set and the revision bumped (as a staff takeover). */
  takeover: boolean;
  /** New user messages: the revision is bumped and a resolved case opens again (the channel has one case). */
  userMessage: boolean;
}

export async function changeChannelCase(db: Queryable, caseId: string, change: ChannelChange): Promise<StaffCaseRow> {
  const bumps = Number(change.takeover) + Number(change.userMessage);
  const { rows } = await db.query<StaffCaseRow>({
    name: "support_chatplatform_change_case",
    text: `update support_cases set
      card = coalesce($2::jsonb, card),
      staff_hold = staff_hold or $3,
      revision = revision + $4,
      status = case when $5 then 'open' else status end,
      resolved_at = case when $5 then null else resolved_at end,
      updated_at = now()
    where id = $1 returning ${COLUMNS}`,
    values: [caseId, change.card === null ? null : JSON.stringify(change.card), change.takeover, bumps, change.userMessage],
  });
  return rows[0]!;
}
