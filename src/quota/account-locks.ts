import type pg from "pg";
import type { AccountKey } from "./account-sql.js";

// How a transaction that moves several accounts locks them (docs/billing.md, "Locks"): all of them in one
// statement, in ascending id order, before any statement that updates one of them. Two such transactions that
// share accounts then queue behind each other, whatever order their work names the accounts in (A sending to B
// while B sends to A), and so do they with the ledger's expiry, which locks its accounts in the same order.
//
// What such a transaction needs is created first, without locking what exists: `on conflict do nothing` takes no
// lock on an existing row (ensureAccount's `do update`, which lets RETURNING see another process's row, does, and
// would lock it out of order). A row this transaction inserts is invisible to the others until it commits, and an
// insert of the same key elsewhere waits for it: such a transaction creates what it needs before it locks any
// account, so that wait cannot close a cycle either.

const CREATE = `
insert into quota_accounts (user_id, kind, period, credits) values ($1::uuid, $2::text, $3::text, $4::bigint)
on conflict (user_id, kind, period) do nothing
returning id::text`;

const READ_ID = `select id::text from quota_accounts where user_id = $1::uuid and kind = $2::text and period = $3::text`;

const LOCK = `select id from quota_accounts where id = any($1::bigint[]) order by id for no key update`;

/** The account's id; created with its base credits (0 for none) when missing, and not locked when it exists. */
export async function createAccount(client: pg.PoolClient, key: AccountKey, base: bigint | null): Promise<string> {
  const values = [key.userId, key.kind, key.period];
  const created = await client.query<{ id: string }>({
    name: "quota_create_account",
    text: CREATE,
    values: [...values, String(base ?? 0n)],
  });
  if (created.rows[0]) return created.rows[0].id;
  // Someone else's row. A statement of its own sees it: one committed while the insert waited for it too.
  const { rows } = await client.query<{ id: string }>({ name: "quota_account_id", text: READ_ID, values });
  return rows[0]!.id;
}

/** Locks the accounts (in any order, repeats allowed) in ascending id order, until the transaction ends. */
export async function lockAccounts(client: pg.PoolClient, ids: readonly string[]): Promise<void> {
  await client.query({ name: "quota_lock_accounts", text: LOCK, values: [ids] });
}
