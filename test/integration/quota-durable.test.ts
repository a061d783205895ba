import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { HoldNotFoundError, HoldResolvedError, type DurableHoldInput, type QuotaLedger, type ReserveInput } from "../../src/quota/index.js";
import type { TestDatabase } from "../helpers/db.js";
import { useLedgerFixture } from "../helpers/ledger-fixture.js";

// Durable holds (docs/billing.md): what is settled later than its request, possibly by another process (a video
// job, a pending transfer), holds its units in PostgreSQL. One guarded statement each for reserve, post and
// void; idempotent by the hold's id; expired by the sweep after `expires_at`; seen by every lease's next sync.

describe("durable holds", () => {
  const fixture = useLedgerFixture("durable");
  let db: TestDatabase;
  let ledger: QuotaLedger;
  beforeAll(() => void ({ db, ledger } = fixture));

  const durable = (userId: string, amount: bigint, extra: Partial<DurableHoldInput> = {}): DurableHoldInput => ({
    kind: "daily_allowance",
    userId,
    base: 1000n,
    id: randomUUID(),
    amount,
    reference: "video:job-1",
    expiresAt: new Date(fixture.clock.now().getTime() + 3_600_000),
    ...extra,
  });
  const reserveInput = (userId: string, amount: bigint): ReserveInput => ({
    kind: "daily_allowance",
    userId,
    base: 1000n,
    amount,
    requestId: "req_durable",
  });
  const account = async (accountId: string) => {
    const { rows } = await db.pool.query(
      "select debits_posted::text as posted, debits_pending::text as pending from quota_account_balances where id = $1",
      [accountId],
    );
    return rows[0] as { posted: string; pending: string };
  };
  const row = async (id: string) =>
    (await db.pool.query("select status, charged::text, lease_id, instance_id from quota_holds where id = $1", [id])).rows[0];

  it("holds, then posts the real charge once; a second post is the first outcome", async () => {
    const user = await fixture.newUser();
    const taken = await ledger.reserveDurable(durable(user, 600n));
    if (!taken.ok) throw new Error("refused");
    expect(taken.hold).toMatchObject({ status: "pending", amount: 600n, charged: null, reference: "video:job-1" });
    expect(await account(taken.hold.accountId)).toEqual({ posted: "0", pending: "600" });
    expect(await row(taken.hold.id)).toEqual({ status: "pending", charged: null, lease_id: null, instance_id: null });

    // Seen by the escrow at once: a request of this process cannot take what the durable hold has.
    await expect(ledger.reserve(reserveInput(user, 401n))).resolves.toMatchObject({ ok: false, allowance: 1000n, reserved: 600n });
    await ledger.flush();

    const posted = await ledger.postDurable(taken.hold.id, 750n);
    expect(posted).toMatchObject({ status: "posted", charged: 750n });
    expect(await account(taken.hold.accountId)).toEqual({ posted: "750", pending: "0" });
    expect(await ledger.postDurable(taken.hold.id, 1n)).toMatchObject({ status: "posted", charged: 750n });
    await expect(ledger.voidDurable(taken.hold.id)).rejects.toBeInstanceOf(HoldResolvedError);
    expect(await account(taken.hold.accountId)).toEqual({ posted: "750", pending: "0" });
  });

  it("voids once, refuses what the account cannot cover, and knows no unknown hold", async () => {
    const user = await fixture.newUser();
    const first = await ledger.reserveDurable(durable(user, 900n));
    expect(first.ok).toBe(true);
    expect(await ledger.reserveDurable(durable(user, 101n))).toMatchObject({ ok: false, allowance: 1000n, used: 0n, reserved: 900n });
    const id = first.ok ? first.hold.id : "";
    expect(await ledger.voidDurable(id)).toMatchObject({ status: "voided", charged: null });
    expect(await ledger.voidDurable(id)).toMatchObject({ status: "voided" });
    await expect(ledger.postDurable(id, 5n)).rejects.toBeInstanceOf(HoldResolvedError);
    expect(await ledger.balance({ kind: "daily_allowance", userId: user, base: 1000n })).toMatchObject({
      used: 0n,
      reserved: 0n,
      remaining: 1000n,
    });
    await expect(ledger.postDurable(randomUUID(), 1n)).rejects.toBeInstanceOf(HoldNotFoundError);
    await expect(ledger.reserveDurable(durable(user, -1n))).rejects.toThrow(RangeError);
  });

  it("is one hold however often and however concurrently its id is reserved, posted or voided", async () => {
    const user = await fixture.newUser();
    const input = durable(user, 100n);
    const other = (await fixture.process()).ledger;
    const reserves = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? other : ledger).reserveDurable(input)));
    for (const r of reserves) expect(r).toMatchObject({ ok: true, hold: { id: input.id, amount: 100n } });
    const accountId = reserves[0]!.ok ? reserves[0]!.hold.accountId : "";
    expect(await account(accountId)).toEqual({ posted: "0", pending: "100" });
    const posts = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => (i % 3 ? ledger.postDurable(input.id, 70n) : other.voidDurable(input.id))),
    );
    const won = posts.find((p) => p.status === "fulfilled")!;
    const status = (won as PromiseFulfilledResult<{ status: string }>).value.status;
    // Whichever resolution came first, every later one agreed with it or was refused; the account moved once.
    for (const p of posts) {
      if (p.status === "fulfilled") expect(p.value.status).toBe(status);
      else expect(p.reason).toBeInstanceOf(HoldResolvedError);
    }
    expect(await account(accountId)).toEqual(status === "posted" ? { posted: "70", pending: "0" } : { posted: "0", pending: "0" });
  });

  it("expires after its expiry by the ledger's clock; a late post still charges, once", async () => {
    const user = await fixture.newUser();
    const now = fixture.clock.now();
    const taken = await ledger.reserveDurable(durable(user, 300n, { expiresAt: new Date(now.getTime() + 60_000) }));
    if (!taken.ok) throw new Error("refused");
    expect((await ledger.expire()).durable).toBe(0);
    fixture.clock.advance(60_000);
    expect((await ledger.expire()).durable).toBe(1);
    expect((await ledger.expire()).durable).toBe(0);
    expect(await account(taken.hold.accountId)).toEqual({ posted: "0", pending: "0" });
    expect(await ledger.voidDurable(taken.hold.id)).toMatchObject({ status: "expired" });
    expect(await ledger.postDurable(taken.hold.id, 250n)).toMatchObject({ status: "posted", charged: 250n });
    expect(await ledger.postDurable(taken.hold.id, 250n)).toMatchObject({ status: "posted", charged: 250n });
    expect(await account(taken.hold.accountId)).toEqual({ posted: "250", pending: "0" });
    fixture.clock.set(new Date());
  });

  it("takes a reseller balance's hold against its credits, which a hold never changes", async () => {
    const user = await fixture.newUser();
    const reseller = { kind: "reseller_usd" as const, base: null };
    expect(await ledger.reserveDurable(durable(user, 1n, reseller))).toMatchObject({ ok: false, allowance: 0n });
    await ledger.creditReseller(user, 500n, "top-up");
    const taken = await ledger.reserveDurable(durable(user, 500n, reseller));
    expect(taken.ok).toBe(true);
    expect(await ledger.balance({ kind: "reseller_usd", userId: user, base: null })).toMatchObject({
      credits: 500n,
      reserved: 500n,
      remaining: 0n,
    });
  });
});
