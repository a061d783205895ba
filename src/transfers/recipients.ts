import { normaliseEmail } from "../auth/email.js";
import type { Pool } from "../db/pool.js";
import { isUuid } from "../ids.js";
import type { TransferRow } from "./transfers-sql.js";

// The recipient a sender names, by email or user ID: an unknown one reads exactly like one who does not accept
// transfers.

const RECIPIENT = `select id::text, email, (disabled_at is not null or transfers_receive_disabled) as unavailable from users where `;
const BY_ID = `${RECIPIENT} id = $1::uuid`;
const BY_EMAIL = `${RECIPIENT} email = $1::text`;

/** The recipient a sender named: undefined when no user with that email or ID accepts transfers. */
export async function recipientOf(pool: Pool, named: string): Promise<{ id: string; email: string } | undefined> {
  const needle = named.trim();
  const { rows } = await pool.query<{ id: string; email: string; unavailable: boolean }>(isUuid(needle) ? BY_ID : BY_EMAIL, [
    isUuid(needle) ? needle : normaliseEmail(needle),
  ]);
  const row = rows[0];
  return row && !row.unavailable ? { id: row.id, email: row.email } : undefined;
}

/** Whether a send names the recipient of an earlier transfer, as an email (any spelling) or an ID. */
export const names = (named: string, t: TransferRow) => {
  const needle = named.trim();
  return isUuid(needle) ? needle.toLowerCase() === t.recipientId : normaliseEmail(needle) === t.recipientEmail;
};
