import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import { faultCode } from "../../src/db/faults.js";
import { expireRows } from "../../src/quota/expire-sql.js";
import { ManualClock, reconcileLedger } from "../../src/quota/index.js";
import { completeRows, type TransferRow } from "../../src/transfers/transfers-sql.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { spendDay } from "../helpers/spend.js";
import { pendingTransfer } from "../helpers/transfers.js";

// The ledger's lock order (docs/billing.md, "Locks") under crossing token transfers: A sends to B while B sends to
// A, and both completions run at once on two pools (two gateway processes), beside the ledger's expiry on both. A
// completion that locked the recipient's day and then the sender's deadlocked with the crossing one (which locks
// them the other way round) and with the expiry (which locks in id order): PostgreSQL then fails one of them with
// 40P01. Locked in id order, they queue instead.

const DAY = "2026-11-26";
const DAILY = 1000;
const PAIRS = 12;
const ROUNDS = 8;
const AMOUNT = 20n;

let db: TestDatabase;
let gw: TestGateway;
let clock: ManualClock;

beforeAll(async () => {
  db = await createTestDatabase();
  clock = new ManualClock(`${DAY}T12:00:00Z`);
  gw = await startTestGateway({
    db,
    clock,
    config: { plans: { std: { daily_tokens: DAILY, context_limit: 128_000 } }, default_plan: "std" },
  });
});

afterAll(async () => {
  await gw?.close();
  await db?.drop();
});

/** Deadlocks PostgreSQL has detected in this database (its backends report them when they end). */
const deadlocks = async () =>
  Number(
    (await db.pool.query<{ n: string }>("select deadlocks::text as n from pg_stat_database where datname = current_database()")).rows[0]!.n,
  );

describe("crossing transfers", () => {
  it("A to B and B to A completing at once on two processes, beside the expiry: no deadlock, each completed once", async () => {
    const users: string[] = [];
    for (let i = 0; i < 2 * PAIRS; i++) {
      const user = await gw.services.auth.users.create({ email: `crossing-${i}@example.test`, password: "crossing-pw-123" });
      // Spent, so that every transfer refills its recipient (a refused one touches only the sender's day).
      await spendDay(gw.services, user.id, DAILY, 600);
      users.push(user.id);
    }
    const before = await deadlocks();
    const pools: Pool[] = [createPool(db.url, PAIRS + 1, () => {}), createPool(db.url, PAIRS + 1, () => {})];
    const failures: string[] = [];
    const sent: TransferRow[] = [];
    try {
      for (let round = 0; round < ROUNDS; round++) {
        // A durable hold past its expiry on every day, for the expiry to take back while the completions run.
        for (const userId of users) {
          const stale = await gw.services.ledger.reserveDurable({
            id: randomUUID(),
            kind: "daily_allowance",
            userId,
            base: BigInt(DAILY),
            amount: 1n,
            reference: "stale",
            expiresAt: new Date(clock.now().getTime() - 1000),
          });
          expect(stale.ok).toBe(true);
        }
        const transfers = await Promise.all(
          Array.from({ length: PAIRS }, (_, p) => [users[2 * p]!, users[2 * p + 1]!]).flatMap(([a, b]) => [
            pendingTransfer(pools[0]!, { senderId: a!, recipientId: b!, amount: AMOUNT, day: DAY, senderBase: BigInt(DAILY) }),
            pendingTransfer(pools[1]!, { senderId: b!, recipientId: a!, amount: AMOUNT, day: DAY, senderBase: BigInt(DAILY) }),
          ]),
        );
        sent.push(...transfers);
        // A to B on one process, B to A on the other, all at once, and each process's expiry.
        const ctx = { today: DAY, baseOf: () => BigInt(DAILY) };
        const outcomes = await Promise.allSettled([
          ...transfers.map((t, i) => completeRows(pools[i % 2]!, t.id, ctx)),
          ...pools.map((pool) => expireRows(pool, 90, clock.now())),
        ]);
        for (const o of outcomes) if (o.status === "rejected") failures.push(faultCode(o.reason));
      }
    } finally {
      // Their backends end, and report what they detected.
      await Promise.all(pools.map((pool) => pool.end()));
    }
    expect(failures).toEqual([]);
    expect(await deadlocks()).toBe(before);

    const { rows } = await db.pool.query<{ status: string; applied: string; restorations: number; hold: string; charged: string }>(
      `select t.status, t.applied::text, h.status as hold, h.charged::text,
         (select count(*) from quota_restorations r where r.source = 'token_transfer' and r.reference = t.id::text)::int as restorations
       from token_transfers t join quota_holds h on h.id = t.hold_id where t.id = any($1::uuid[])`,
      [sent.map((t) => t.id)],
    );
    expect(rows).toHaveLength(2 * PAIRS * ROUNDS);
    const once = { status: "completed", applied: String(AMOUNT), restorations: 1, hold: "posted", charged: String(AMOUNT) };
    for (const row of rows) expect(row).toEqual(once);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });
});
