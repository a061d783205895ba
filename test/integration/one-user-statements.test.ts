import { setTimeout as sleep } from "node:timers/promises";
import { quickAddJob, runOnce } from "graphile-worker";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollDueVideoJobs } from "../../src/media/video-poller.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { reconcileLedger } from "../../src/quota/index.js";
import { videoPollDeps } from "../../src/runtime/services.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { gatewayTasks, startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { lockAccount, quiesce } from "../helpers/metering-checks.js";
import { sdkUser } from "../helpers/sdk-user.js";
import { pendingTransfers } from "../helpers/transfers.js";

// docs/scaling.md, "The test that keeps the plan honest": on a database sharded by user, a transaction that writes
// the rows of one user runs on one shard. Row-level triggers on every table a ledger or quota statement writes
// record, per transaction, whose rows it wrote (a row keyed by an account is its account's user); a realistic
// workload runs through the real code (two gateway processes on one database, HTTP and the services); then every
// transaction must have written the rows of at most one user, except the exceptions named below, each with its
// reason and its way of running on a sharded database (docs/scaling.md names the same ones).
//
// Writes only: a statement's reads and row locks leave no trace a trigger sees. Every ledger transaction locks
// the rows it then writes (docs/billing.md, "Locks"), and its reads are by the keys of those rows (a lease, an
// account, a user), which is what the docs' statement table says statement by statement.

/** Tables written by ledger and quota statements, and the column that names the row's user (directly or via its account). */
const AUDITED: readonly (readonly [table: string, via: "user" | "account", column: string])[] = [
  ["users", "user", "id"],
  ["quota_accounts", "user", "user_id"],
  ["quota_leases", "account", "account_id"],
  ["quota_holds", "account", "account_id"],
  ["quota_restorations", "account", "account_id"],
  ["quota_hold_rollups", "account", "account_id"],
  ["quota_reset_grants", "user", "user_id"],
  ["quota_reset_uses", "user", "user_id"],
  ["reseller_credits", "user", "user_id"],
  // A transfer's record is its sender's (its distribution column on a sharded database: docs/scaling.md).
  ["token_transfers", "user", "sender_id"],
  ["token_transfer_previews", "user", "user_id"],
  ["idempotency_keys", "user", "owner_id"],
  ["video_jobs", "user", "user_id"],
  ["media_cache", "user", "user_id"],
  ["request_logs", "user", "user_id"],
  ["request_log_rollups", "user", "user_id"],
];

const AUDIT_SQL = `
create table one_user_audit (
  id bigserial primary key, xid bigint not null, tbl text not null, op text not null, user_id uuid, query text not null
);
create function one_user_audit() returns trigger language plpgsql as $$
declare
  u uuid;
begin
  if current_setting('one_user_audit.off', true) = 'on' then
    return null;
  end if;
  -- The audited table by the name the trigger was made on (argument 2): a partitioned table's trigger fires on its
  -- partitions, whose tg_table_name is the day's table.
  -- The account a row names is looked up after its statement: an account created by the same statement is seen.
  if tg_argv[0] = 'account' then
    execute format('select user_id from quota_accounts where id = ($1).%I', tg_argv[1])
      using case when tg_op = 'DELETE' then old else new end into u;
  else
    execute format('select ($1).%I::uuid', tg_argv[1]) using case when tg_op = 'DELETE' then old else new end into u;
  end if;
  insert into one_user_audit (xid, tbl, op, user_id, query) values (txid_current(), tg_argv[2], tg_op, u, left(current_query(), 300));
  return null;
end $$;
${AUDITED.map(
  ([table, via, column]) =>
    `create trigger ${table}_one_user_audit after insert or update or delete on ${table} for each row execute function one_user_audit('${via}', '${column}', '${table}');`,
).join("\n")}`;

interface AuditRow {
  xid: string;
  tbl: string;
  op: string;
  user_id: string | null;
  query: string;
}

/** One transaction's writes: the users whose rows it wrote, and which tables with which operations. */
interface Written {
  xid: string;
  users: Set<string>;
  writes: Set<string>;
  queries: Set<string>;
}

function byTransaction(rows: readonly AuditRow[]): Written[] {
  const out = new Map<string, Written>();
  for (const r of rows) {
    const t = out.get(r.xid) ?? { xid: r.xid, users: new Set(), writes: new Set(), queries: new Set() };
    t.users.add(r.user_id ?? "(no user: a row whose account is gone)");
    t.writes.add(`${r.op} ${r.tbl}`);
    t.queries.add(r.query.replace(/\s+/g, " ").slice(0, 120));
    out.set(r.xid, t);
  }
  return [...out.values()];
}

const only = (t: Written, allowed: readonly string[]) => [...t.writes].every((w) => allowed.includes(w));

/**
 * The transactions allowed to write the rows of several users, each with why and how it runs sharded
 * (docs/scaling.md, "The exceptions"). Each test is what the transaction wrote, so nothing else passes as one.
 */
const EXCEPTIONS: readonly { name: string; reason: string; matches(t: Written): boolean }[] = [
  {
    name: "transfer completion",
    reason:
      "moves units from the sender's day to the recipient's by design: two users, no more; sharded, a Citus two-shard transaction (2PC), or two one-user steps around the pending record",
    matches: (t) =>
      t.users.size === 2 &&
      t.writes.has("UPDATE token_transfers") &&
      only(t, [
        "UPDATE token_transfers",
        "UPDATE quota_holds",
        "UPDATE quota_accounts",
        "INSERT quota_accounts",
        "INSERT quota_restorations",
      ]),
  },
  {
    name: "request-log writer",
    reason:
      "the batched writer inserts the rows of whoever was logged lately, in one statement: the log, not the ledger; it moves to a database of its own first, and sharded it is a multi-shard insert split per shard",
    matches: (t) => only(t, ["INSERT request_logs"]),
  },
  {
    name: "video poll claim",
    reason:
      "the poller claims the due jobs of whoever submitted them, moving only their poll times (each job's money ends in a one-user transaction); sharded, a claim per shard, like the sweeps",
    matches: (t) => only(t, ["UPDATE video_jobs"]),
  },
  {
    name: "ledger retention",
    reason:
      "a maintenance sweep over everyone's old rows by design; sharded, the same statement runs per shard (Citus sends a multi-shard DELETE to each shard), each batch within one",
    matches: (t) =>
      only(t, [
        "DELETE quota_holds",
        "INSERT quota_hold_rollups",
        "UPDATE quota_hold_rollups",
        "DELETE quota_leases",
        "DELETE idempotency_keys",
      ]),
  },
];

/** The transactions that wrote several users' rows and are not one of the exceptions. */
function violations(rows: readonly AuditRow[]): Written[] {
  return byTransaction(rows).filter((t) => t.users.size > 1 && !EXCEPTIONS.some((e) => e.matches(t)));
}

const DAILY = 100_000;
let db: TestDatabase;
let mock: MockUpstream;
let gw: TestGateway;
let other: TestGateway;

const config = () => ({
  providers: {
    main: { protocol: "openai" as const, base_url: mock.baseUrl },
    vid: { protocol: "video" as const, base_url: mock.baseUrl },
  },
  models: {
    m1: { kind: "chat" as const, upstream: "mock-gpt-small", targets: ["main"] },
    "video-a": {
      kind: "video" as const,
      upstream: "mock-video",
      targets: ["vid"],
      video_price: { units_per_second: 100, default_seconds: 2, max_seconds: 10 },
    },
  },
  plans: { std: { daily_tokens: DAILY, weekly_resets: 2, context_limit: 128_000 } },
  default_plan: "std",
  // Leases stay open across the test's steps: the expiry step finds the stopped process's lease still pending.
  quota: { lease_idle_ms: 60_000 },
  // Room for a loaded machine; the refund step holds the account's lock past it on purpose.
  database: { request_timeout_ms: 4_000 },
  media: { download: { allow_private: ["127.0.0.1"] } },
});

async function audit(): Promise<AuditRow[]> {
  return (await db.pool.query<AuditRow>("select xid::text, tbl, op, user_id::text, query from one_user_audit order by id")).rows;
}

/** Runs `sql` with the audit off: the test's own arrangements are no ledger statement. */
async function unaudited(sql: string, values: unknown[] = []) {
  const client = await db.pool.connect();
  try {
    await client.query("begin");
    await client.query("set local one_user_audit.off = 'on'");
    await client.query(sql, values);
    await client.query("commit");
  } finally {
    client.release();
  }
}

const chat = (client: OpenAI) =>
  client.chat.completions.create({ model: "m1", messages: [{ role: "user", content: "hello" }], max_tokens: 16 });

async function chatStream(client: OpenAI) {
  const stream = await client.chat.completions.create({
    model: "m1",
    messages: [{ role: "user", content: "hello" }],
    max_tokens: 16,
    stream: true,
  });
  for await (const chunk of stream) void chunk;
}

/** The user's client of another gateway process. */
const clientOn = (on: TestGateway, key: string) => new OpenAI({ apiKey: key, baseURL: `${on.url}/v1`, maxRetries: 0 });

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(AUDIT_SQL);
  mock = await startMockUpstream();
  gw = await startTestGateway({ db, config: config() });
  other = await startTestGateway({ db, config: config() });
});

afterAll(async () => {
  await other?.close();
  await gw?.close();
  await mock?.close();
  await db?.drop();
});

describe("every ledger and quota transaction writes the rows of one user", () => {
  it("holds for a day's mix on two processes, except the named exceptions", async () => {
    const [alice, bob, carol] = [await sdkUser(gw, "one-user"), await sdkUser(gw, "one-user"), await sdkUser(gw, "one-user")];
    const bobOnOther = { ...bob, client: clientOn(other, bob.key) };

    // A refund: a first request opens carol's lease with headroom; the next is admitted from it, its charge's sync
    // waits on the lease's lock past database.request_timeout_ms, the client is answered 503 with nothing charged,
    // then the sync commits and the refund makes that true.
    await chat(carol.client);
    // Two seconds on, the lease's demand (units reserved over the last second or two) has forgotten the first
    // request, so admitting the next asks for no top-up ahead of demand: its charge's sync is the statement that
    // waits on the lock, not a top-up queued before it.
    await sleep(2_100);
    const lock = await lockAccount(db.pool, carol.id, "leases");
    let withdrawn: string | null | undefined;
    try {
      const refused = await chat(carol.client).catch((err: unknown) => err as InstanceType<typeof OpenAI.APIError>);
      expect(refused).toMatchObject({ status: 503 });
      withdrawn = (refused as InstanceType<typeof OpenAI.APIError>).headers?.get("x-request-id");
    } finally {
      await lock.unlock();
    }
    const refunded = "select h.status from quota_holds h where h.request_id = $1";
    await expect.poll(async () => (await db.pool.query(refunded, [withdrawn])).rows[0]?.status, { timeout: 60_000 }).toBe("voided");

    // Chat requests of three users at once on two processes: leases opened, synced with their settlements and
    // journal rows, some streamed. A 503 of a loaded machine (a charge withdrawn at its deadline) is one more
    // ledger path, not a failure of what this test checks.
    await Promise.all(
      [alice, bob, carol, bobOnOther].flatMap((u) =>
        Array.from({ length: 6 }, async (_, i) => {
          await (i % 3 === 0 ? chatStream(u.client) : chat(u.client)).catch((err: unknown) => {
            if (!(err instanceof OpenAI.APIError && err.status === 503)) throw err;
          });
        }),
      ),
    );
    // Refused requests (an unknown model): their log rows go through the batched writer, not a settlement.
    await Promise.all(
      [alice, bob].map((u) =>
        expect(u.client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "x" }] })).rejects.toThrow(),
      ),
    );
    await quiesce(gw, other);

    // A token transfer from bob to alice (who spent today, and has no reset used yet that gave it back), completed by the sending process.
    const sent = await gw.services.transfers.send(
      { userId: bob.id, plan: "std" },
      { recipient: alice.id, amount: 10, idempotency_key: "t-1" },
    );
    expect(sent.pending).toBe(true);
    await expect.poll(() => pendingTransfers(db.pool), { timeout: 60_000 }).toBe(0);
    const done = await db.pool.query("select status, applied::int from token_transfers where id = $1", [sent.transfer.id]);
    expect(done.rows[0]).toEqual({ status: "completed", applied: 10 });

    // Reserve resets: a grant and a use (each in its idempotency key's transaction); a reseller credit.
    await gw.services.resets.grant(alice.id, { count: 1 }, "cli", "grant-1");
    expect((await gw.services.resets.use(alice.id, "use-1")).status).toBe(200);
    await gw.services.resellers.credit(bob.id, "5", "top-up", "credit-1");

    // Video jobs of two users: each a durable hold at submission, posted at its end with the job and its log row;
    // the poller claims every due job in one statement.
    const submit = async (key: string) => {
      const res = await fetch(`${gw.url}/v1/video/generations`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "video-a", prompt: "a cat", duration: 2 }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { id: string }).id;
    };
    const jobs = [await submit(carol.key), await submit(alice.key)];
    for (let round = 0; round < 5; round++) {
      await unaudited("update video_jobs set next_poll_at = now() where id = any($1::uuid[])", [jobs]);
      await pollDueVideoJobs(videoPollDeps(gw.services));
    }
    const ended = await db.pool.query("select status from video_jobs where id = any($1::uuid[])", [jobs]);
    expect(ended.rows).toEqual([{ status: "completed" }, { status: "completed" }]);

    // A process that stops answering: its lease (carol's, opened by a request on it) is expired by the other's
    // sweep after the fence.
    await chat(clientOn(other, carol.key));
    await other.services.metering.drain();
    // The lease that request opened is the newest of carol's; its process is made silent, as a stopped one is.
    const { rows: newest } = await db.pool.query<{ instance_id: string }>(
      `select l.instance_id from quota_leases l join quota_accounts a on a.id = l.account_id
       where a.user_id = $1 and l.status = 'pending' order by l.created_at desc limit 1`,
      [carol.id],
    );
    await unaudited("update gateway_instances set last_seen_at = now() - interval '1 hour' where id = $1", [newest[0]!.instance_id]);
    const expired = await gw.services.ledger.expire();
    expect(expired.leases).toBeGreaterThan(0);

    // The daily retention over rows made old: resolved holds, ended leases and idempotency keys of every user.
    await quiesce(gw, other);
    await unaudited("update quota_holds set resolved_at = resolved_at - interval '400 days' where resolved_at is not null");
    await unaudited("update quota_leases set resolved_at = resolved_at - interval '400 days' where resolved_at is not null");
    await unaudited("update idempotency_keys set created_at = created_at - interval '400 days'");
    await quickAddJob({ pgPool: db.pool }, "ledger_retention", {});
    await runOnce({ pgPool: db.pool, taskList: gatewayTasks(gw) });
    expect(await reconcileLedger(db.pool)).toEqual([]);

    const rows = await audit();
    const transactions = byTransaction(rows);
    // The workload reached every kind of statement the plan names.
    const written = new Set(rows.map((r) => `${r.op} ${r.tbl}`));
    for (const w of [
      "UPDATE quota_leases",
      "INSERT quota_holds",
      "UPDATE quota_holds",
      "INSERT quota_restorations",
      "INSERT quota_reset_uses",
      "INSERT quota_reset_grants",
      "INSERT reseller_credits",
      "INSERT token_transfers",
      "UPDATE token_transfers",
      "INSERT idempotency_keys",
      "INSERT video_jobs",
      "INSERT request_logs",
      // The refund's journal: the request's row rewritten as the 503 it was answered.
      "UPDATE request_logs",
      "DELETE quota_holds",
      "INSERT quota_hold_rollups",
    ]) {
      expect(written, w).toContain(w);
    }
    expect(rows.filter((r) => r.user_id === null)).toEqual([]);
    expect(violations(rows)).toEqual([]);
    // Each exception was seen (so its rule is not dead) and stayed within its bound.
    const seen = new Set(transactions.filter((t) => t.users.size > 1).map((t) => EXCEPTIONS.find((e) => e.matches(t))!.name));
    expect(seen).toContain("transfer completion");
    expect(seen).toContain("ledger retention");
    expect(seen).toContain("video poll claim");
    // A completion's two users are its sender and its recipient, no third.
    const completions = transactions.filter((t) => t.users.size > 1 && EXCEPTIONS[0]!.matches(t));
    expect(completions.map((t) => [...t.users].sort())).toEqual([[alice.id, bob.id].sort()]);
  }, 240_000);

  it("catches a statement that writes two users' rows", async () => {
    await db.pool.query("truncate one_user_audit");
    const [a, b] = [await sdkUser(gw, "one-user-bad"), await sdkUser(gw, "one-user-bad")];
    await chat(a.client);
    await chat(b.client);
    await quiesce(gw);
    await db.pool.query("truncate one_user_audit");
    await db.pool.query("update quota_accounts set updated_at = now() where user_id = any($1::uuid[])", [[a.id, b.id]]);
    const found = violations(await audit());
    expect(found).toHaveLength(1);
    expect(found[0]!.users).toEqual(new Set([a.id, b.id]));
  });
});
