import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import type { TestGateway } from "./gateway-app.js";

// Shared checks of the metering tests (chat-metering, chat-concurrency): a chat chunk's text, and the "settled
// exactly once" invariants of one user's ledger account, holds and request-log rows.

export type Row = Record<string, unknown>;

/** Request-log writes per request id, of gateways passed to countLogWrites (the table's conflict rule would hide a second row). */
const logWrites = new Map<string, number>();

/**
 * Counts every request-log row a gateway writes (through the writer, or committed with a settlement in the
 * ledger's journal), so settled() can tell "logged once" from "deduplicated".
 */
export function countLogWrites(gw: TestGateway): void {
  const count = (requestId: string) => logWrites.set(requestId, (logWrites.get(requestId) ?? 0) + 1);
  const writer = gw.services.requestLog;
  const write = writer.write.bind(writer);
  writer.write = (row) => {
    count(row.requestId);
    write(row);
  };
  const { ledger } = gw.services;
  const settle = ledger.settle.bind(ledger);
  const release = ledger.release.bind(ledger);
  const counted = (record: string | null | undefined) => {
    if (record) count((JSON.parse(record) as { request_id: string }).request_id);
  };
  ledger.settle = (holdId, charged, record, options) => {
    counted(record);
    return settle(holdId, charged, record, options);
  };
  ledger.release = (holdId, record) => {
    counted(record);
    return release(holdId, record);
  };
}

/**
 * Waits for every settlement, has the leases give their unused units back (so that pending debits are exactly
 * what requests still hold) and writes the request log.
 */
export async function quiesce(...gateways: TestGateway[]): Promise<void> {
  for (const gw of gateways) await gw.services.metering.drain();
  for (const gw of gateways) await gw.services.ledger.flush();
  for (const gw of gateways) await gw.services.requestLog.flush();
}

/** The content delta of a chat chunk's first choice ("" when none). */
export function deltaText(data: string): string {
  const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string | null } }[] };
  return chunk.choices?.[0]?.delta?.content ?? "";
}

export async function rowsOf(pool: Pool, text: string, values: unknown[]): Promise<Row[]> {
  return (await pool.query(text, values)).rows as Row[];
}

const holdsOf = (pool: Pool, userId: string) =>
  rowsOf(pool, "select h.* from quota_holds h join quota_accounts a on a.id = h.account_id where a.user_id = $1", [userId]);

export interface Settled {
  account: Row;
  holds: Row[];
  logs: Row[];
  /** The first hold and log row (the only ones in single-request scenarios). */
  hold: Row;
  log: Row;
}

/**
 * Waits until the user's `requests` holds are resolved (gateways see a cancellation asynchronously), then for
 * every gateway's settlements and request log; asserts that each request was settled exactly once and that
 * the ledger agrees with the log, and returns the rows.
 */
export async function settled(gateways: TestGateway[], userId: string, requests = 1): Promise<Settled> {
  const pool = gateways[0]!.db.pool;
  for (let i = 0; i < 400; i++) {
    const holds = await holdsOf(pool, userId);
    if (holds.length >= requests && holds.every((h) => h.status !== "pending")) break;
    await sleep(25);
  }
  await quiesce(...gateways);
  const [account] = await rowsOf(pool, "select * from quota_account_balances where user_id = $1", [userId]);
  const holds = await holdsOf(pool, userId);
  const logs = await rowsOf(pool, "select * from request_logs where user_id = $1", [userId]);
  const held = logs.filter((l) => holds.some((h) => h.request_id === l.request_id));
  // Exactly once: one hold and one log row per metered request, nothing left pending, and they agree.
  expect(holds).toHaveLength(requests);
  expect(new Set(holds.map((h) => h.request_id)).size).toBe(requests);
  expect(held).toHaveLength(requests);
  expect(holds.filter((h) => h.status === "pending")).toEqual([]);
  expect(account!.debits_pending).toBe("0");
  const posted = holds.filter((h) => h.status === "posted").reduce((sum, h) => sum + BigInt(h.charged as string), 0n);
  expect(BigInt(account!.debits_posted as string)).toBe(posted);
  const logged = logs.reduce((sum, l) => sum + BigInt(l.quota_charged as string), 0n);
  expect(logged).toBe(posted);
  if (logWrites.size > 0) expect(logs.filter((l) => logWrites.get(l.request_id as string) !== 1)).toEqual([]);
  for (const log of held) {
    const hold = holds.find((h) => h.request_id === log.request_id)!;
    expect(log.quota_charged).toBe(hold.status === "posted" ? hold.charged : "0");
  }
  return { account: account!, holds, logs, hold: holds[0]!, log: held[0]! };
}

/**
 * Locks a user's ledger account rows in an open transaction, so reservations and full syncs wait on it; or its leases'
 * rows, which a sync that only posts takes alone.
 */
export async function lockAccount(pool: Pool, userId: string, rows: "account" | "leases" = "account") {
  const client = await pool.connect();
  await client.query("begin");
  await client.query(
    rows === "account"
      ? "select 1 from quota_accounts where user_id = $1 for update"
      : "select 1 from quota_leases l join quota_accounts a on a.id = l.account_id where a.user_id = $1 for update of l",
    [userId],
  );
  const waiting = "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'";
  return {
    /**
     * Statements of this database waiting on a lock; asked on another connection, since inside the lock's
     * transaction pg_stat_activity is a snapshot taken at its first read.
     */
    waiters: async () => (await pool.query<{ n: number }>(waiting)).rows[0]!.n,
    unlock: async () => {
      await client.query("commit");
      client.release();
    },
  };
}
