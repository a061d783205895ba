import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { answeredByServer, isTransientDbError } from "../../src/db/faults.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { withAdmin } from "../helpers/admin-db.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startPgFaultProxy } from "../helpers/pg-fault-proxy.js";
import {
  cancelLoop,
  injectAtPool,
  lockTimeoutFor,
  observerPool,
  readOnlyFor,
  stallFor,
  statementTimeoutFor,
  writesData,
  type SqlFault,
} from "../helpers/sql-faults.js";

// The SQL-fault helpers (test/helpers/sql-faults.ts) on plain connections: each produces its SQLSTATE while it
// runs, ends when it should (it still holds halfway, and is gone the moment `over` resolves), and leaves the
// database as it was: no setting of its own, no session that read the fault's setting, no lock, statements
// answered as before.

const FAULT_MS = 1_500;

let db: TestDatabase;
let observer: Pool;
let database: string;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
  database = new URL(db.url).pathname.slice(1);
  observer = observerPool(db);
  await observer.query("create table probe (n int)");
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await observer?.end();
  await db?.drop();
});

/** A session of its own on the test database, as a gateway's pool opens them; ended after the test. */
async function session(): Promise<{ client: pg.Client; pid: number }> {
  const client = new pg.Client({ connectionString: db.url });
  // A terminated session reports its end as an error event.
  client.on("error", () => {});
  await client.connect();
  cleanups.push(() => client.end().catch(() => {}));
  // From the connection's start-up (BackendKeyData), not a statement: a 1 ms statement_timeout can refuse even
  // `select pg_backend_pid()` on a loaded machine.
  const pid = (client as pg.Client & { processID: number }).processID;
  return { client, pid };
}

/** The SQLSTATE a statement failed with, or "ok". */
async function outcome(statement: Promise<unknown>): Promise<string> {
  try {
    await statement;
    return "ok";
  } catch (err) {
    return String((err as { code?: unknown }).code ?? (err as Error).message);
  }
}

const alive = async (pid: number) =>
  (await observer.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where pid = $1", [pid])).rows[0]!.n === 1;

/**
 * A session's setting. Under a 1 ms statement_timeout the `show` itself can be cancelled (57014, reported as "user
 * request" when the timer fires as the statement ends): it is asked again, as that proves nothing either way.
 */
async function show(client: pg.Client, setting: string): Promise<string | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await client.query<Record<string, string>>(`show ${setting}`)).rows[0]![setting];
    } catch (err) {
      if (attempt === 20 || (err as { code?: string }).code !== "57014") throw err;
    }
  }
}

/** The database is as the test found it: no setting of its own, a new session as usual, nobody else locking. */
async function expectNormal() {
  const settings = await withAdmin(inject("adminDatabaseUrl"), (c) =>
    c.query("select s.setconfig from pg_db_role_setting s join pg_database d on d.oid = s.setdatabase where d.datname = $1", [database]),
  );
  expect(settings.rows).toEqual([]);
  const { client } = await session();
  expect({
    readOnly: await show(client, "default_transaction_read_only"),
    statementTimeout: await show(client, "statement_timeout"),
    lockTimeout: await show(client, "lock_timeout"),
  }).toEqual({ readOnly: "off", statementTimeout: "0", lockTimeout: "0" });
  expect(await outcome(client.query("insert into probe values (0)"))).toBe("ok");
  expect(await outcome(client.query("select pg_sleep(0.02), count(*) from probe"))).toBe("ok");
  const locks = await observer.query("select mode from pg_locks where relation = 'probe'::regclass and pid <> pg_backend_pid()");
  expect(locks.rows).toEqual([]);
}

/** Waits until halfway through the fault: it must still hold then. */
const halfway = async (fault: SqlFault) => {
  await fault.applied;
  await sleep(FAULT_MS / 2);
};

describe("database settings that a failover, an operator or a migration changes", () => {
  it("readOnlyFor: the sessions are terminated, new ones are read-only (25006); then writable again, the read-only ones terminated", async () => {
    const before = await session();
    const fault = readOnlyFor(db, FAULT_MS);
    await fault.applied;
    expect(await alive(before.pid)).toBe(false);
    const during = await session();
    expect(await show(during.client, "default_transaction_read_only")).toBe("on");
    expect(await outcome(during.client.query("insert into probe values (1)"))).toBe("25006");
    expect(await outcome(during.client.query("select count(*) from probe"))).toBe("ok");
    await halfway(fault);
    expect(await outcome((await session()).client.query("insert into probe values (1)"))).toBe("25006");
    await fault.over;
    expect(await alive(during.pid)).toBe(false);
    expect(fault.stats().terminated).toBeGreaterThanOrEqual(3);
    await expectNormal();
  });

  it("statementTimeoutFor: new sessions time out (57014); then the setting is gone, and so are those sessions", async () => {
    const before = await session();
    const fault = statementTimeoutFor(db, FAULT_MS);
    await fault.applied;
    expect(await alive(before.pid)).toBe(false);
    const during = await session();
    expect(await show(during.client, "statement_timeout")).toBe("1ms");
    expect(await outcome(during.client.query("select pg_sleep(0.05)"))).toBe("57014");
    expect(await outcome(during.client.query("insert into probe select generate_series(1, 20000)"))).toBe("57014");
    await halfway(fault);
    expect(await outcome((await session()).client.query("select pg_sleep(0.05)"))).toBe("57014");
    await fault.over;
    expect(await alive(during.pid)).toBe(false);
    await expectNormal();
  });

  it("lockTimeoutFor: statements touching the locked table fail with 55P03, others run; then the lock and the setting are gone", async () => {
    const fault = lockTimeoutFor(db, FAULT_MS, { table: "probe", lockTimeout: "50ms" });
    await fault.applied;
    const held = await observer.query("select mode from pg_locks where relation = 'probe'::regclass and granted");
    expect(held.rows).toEqual([{ mode: "AccessExclusiveLock" }]);
    const during = await session();
    expect(await show(during.client, "lock_timeout")).toBe("50ms");
    expect(await outcome(during.client.query("select count(*) from probe"))).toBe("55P03");
    expect(await outcome(during.client.query("insert into probe values (2)"))).toBe("55P03");
    expect(await outcome(during.client.query("select 1"))).toBe("ok");
    await halfway(fault);
    expect(await outcome((await session()).client.query("select count(*) from probe"))).toBe("55P03");
    await fault.over;
    expect(await alive(during.pid)).toBe(false);
    await expectNormal();
  });

  it("end() ends a fault at once and restores the database", async () => {
    const fault = readOnlyFor(db, 600_000);
    await fault.applied;
    expect(await outcome((await session()).client.query("insert into probe values (3)"))).toBe("25006");
    await fault.end();
    await expectNormal();
  });
});

describe("faults of statements and connections", () => {
  it("cancelLoop: every active statement is cancelled (57014), again and again; the spared observer is not; then statements run", async () => {
    const { client } = await session();
    const fault = cancelLoop(db, 20, FAULT_MS);
    await fault.applied;
    expect(await outcome(client.query("select pg_sleep(5)"))).toBe("57014");
    expect(await outcome(observer.query("select pg_sleep(0.2)"))).toBe("ok");
    await halfway(fault);
    expect(await outcome(client.query("select pg_sleep(5)"))).toBe("57014");
    // The canceller counts a signal once its own statement is answered, which may be after the victim's error.
    await expect.poll(() => fault.stats().cancelled).toBeGreaterThanOrEqual(2);
    await fault.over;
    expect(await outcome(client.query("select pg_sleep(0.2)"))).toBe("ok");
    await expectNormal();
  });

  it("stallFor: statements through the proxy get no answer (the client's query timeout); then they are answered", async () => {
    const proxy = await startPgFaultProxy(db.url);
    cleanups.push(() => proxy.close());
    const pool = createPool(proxy.url, 2, () => {}, { queryTimeoutMs: 300, connectTimeoutMs: 300 });
    cleanups.push(() => pool.end());
    expect(await outcome(pool.query("select 1"))).toBe("ok");
    const fault = stallFor(proxy, FAULT_MS);
    await fault.applied;
    // A statement on an open connection, then a connection opened during the stall.
    expect(await outcome(pool.query("select 1"))).toBe("Query read timeout");
    await halfway(fault);
    expect(await outcome(pool.query("select 1"))).toMatch(/timeout/);
    await fault.over;
    expect(await outcome(pool.query("select 1"))).toBe("ok");
    await expectNormal();
  });

  it("injectAtPool: the pool's writes are refused as the server would (53100, a pg.DatabaseError), never sent; then the pool is as it was", async () => {
    const pool = createPool(db.url, 2, () => {});
    cleanups.push(() => pool.end());
    const count = async () => (await observer.query<{ n: number }>("select count(*)::int as n from probe")).rows[0]!.n;
    const rows = await count();
    const fault = injectAtPool(pool, { code: "53100", forMs: FAULT_MS, when: writesData });
    await fault.applied;
    const refused = await pool.query("insert into probe values (4)").catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(pg.DatabaseError);
    expect(refused).toMatchObject({ code: "53100", severity: "ERROR" });
    // What the gateway's judgement of errors makes of it: an answer of the server, and transient.
    expect(answeredByServer(refused)).toBe(true);
    expect(isTransientDbError(refused)).toBe(true);
    const client = await pool.connect();
    try {
      expect(await outcome(client.query({ text: "update probe set n = n + 1" }))).toBe("53100");
      expect(await outcome(client.query("select count(*) from probe"))).toBe("ok");
    } finally {
      client.release();
    }
    await halfway(fault);
    expect(await outcome(pool.query("delete from probe"))).toBe("53100");
    expect(await count()).toBe(rows);
    expect(fault.stats().refused).toBe(3);
    await fault.over;
    expect(await outcome(pool.query("insert into probe values (5)"))).toBe("ok");
    const after = await pool.connect();
    try {
      expect(Object.hasOwn(after, "query")).toBe(false);
      expect(await outcome(after.query("update probe set n = n"))).toBe("ok");
    } finally {
      after.release();
    }
    expect(await count()).toBe(rows + 1);
    await expectNormal();
  });
});
