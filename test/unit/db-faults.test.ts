import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import pg from "pg";
import {
  answeredByServer,
  DatabaseUnavailableError,
  isDataError,
  isTransientDbError,
  readWithinDeadline,
  waitForDatabase,
  withinDeadline,
} from "../../src/db/faults.js";
import { createDatabaseHealth } from "../../src/db/health.js";
import type { Pool } from "../../src/db/pool.js";

const pgError = (code: string, message = "boom") => Object.assign(new Error(message), { code });

/** A pino logger whose lines the test reads. */
function capture() {
  const lines: { level: number; msg: string; [k: string]: unknown }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as (typeof lines)[number]);
      done();
    },
  });
  return { logger: pino({ level: "debug" }, stream), lines };
}

describe("isTransientDbError", () => {
  it.each([
    ["08006 connection failure", pgError("08006")],
    ["08003 connection does not exist", pgError("08003")],
    ["57P01 admin shutdown", pgError("57P01")],
    ["57P03 cannot connect now", pgError("57P03")],
    ["53300 too many connections", pgError("53300")],
    ["40001 serialization failure", pgError("40001")],
    ["40P01 deadlock", pgError("40P01")],
    ["25006 read-only transaction (a failover to a standby)", pgError("25006")],
    ["25P03 idle-in-transaction session ended", pgError("25P03")],
    ["57014 statement cancelled (statement_timeout, pg_cancel_backend)", pgError("57014")],
    ["55P03 lock not available (a migration's lock_timeout)", pgError("55P03")],
    ["53100 disk full", pgError("53100")],
    ["53200 out of memory", pgError("53200")],
    ["57P02 crash shutdown", pgError("57P02")],
    ["57P05 idle session timeout", pgError("57P05")],
    ["58030 I/O error", pgError("58030")],
    ["58000 system error", pgError("58000")],
    ["ECONNREFUSED", pgError("ECONNREFUSED")],
    ["ECONNRESET", pgError("ECONNRESET")],
    ["a connection ended by node-postgres", new Error("Connection terminated unexpectedly")],
    ["a connect timeout", new Error("timeout exceeded when trying to connect")],
    ["a query read timeout", new Error("Query read timeout")],
    ["a client no longer queryable", new Error("Client has encountered a connection error and is not queryable")],
    ["the gateway's own 503", new DatabaseUnavailableError()],
    [
      "a pg error wrapped by drizzle (DrizzleQueryError's cause)",
      Object.assign(new Error("Failed query: select 1"), { cause: pgError("ECONNRESET") }),
    ],
  ])("%s is transient", (_name, err) => {
    expect(isTransientDbError(err)).toBe(true);
  });

  it.each([
    ["22P02 invalid text representation", pgError("22P02")],
    ["23505 unique violation", pgError("23505")],
    ["42P01 undefined table", pgError("42P01")],
    ["25001 active transaction (a bug, not a state)", pgError("25001")],
    ["55000 object not in prerequisite state", pgError("55000")],
    ["57P04 database dropped", pgError("57P04")],
    ["28P01 wrong password", pgError("28P01")],
    ["a TypeError", new TypeError("x is undefined")],
    ["a string", "Connection terminated"],
    ["null", null],
    ["a data error wrapped by drizzle", Object.assign(new Error("Failed query: insert"), { cause: pgError("23505") })],
  ])("%s is definitive", (_name, err) => {
    expect(isTransientDbError(err)).toBe(false);
  });

  it("only an error the server answered says the statement did not commit", () => {
    const server = Object.assign(new pg.DatabaseError("cannot execute UPDATE in a read-only transaction", 0, "error"), { code: "25006" });
    expect(answeredByServer(server)).toBe(true);
    expect(answeredByServer(Object.assign(new Error("Failed query"), { cause: server }))).toBe(true);
    // A cut or an abandoned statement may have committed.
    expect(answeredByServer(pgError("ECONNRESET"))).toBe(false);
    expect(answeredByServer(new Error("Query read timeout"))).toBe(false);
    expect(answeredByServer(new Error("Connection terminated unexpectedly"))).toBe(false);
    // A plain object with a SQLSTATE is not the server's answer.
    expect(answeredByServer(pgError("25006"))).toBe(false);
  });

  it("data errors are classes 22 and 23 only", () => {
    expect([pgError("22003"), pgError("23503"), pgError("08006"), pgError("42601")].map(isDataError)).toEqual([true, true, false, false]);
  });

  it("the 503 names the code, says nothing was charged and carries Retry-After", () => {
    const err = new DatabaseUnavailableError();
    expect({ status: err.status, code: err.code, retryAfter: err.headers?.["Retry-After"] }).toEqual({
      status: 503,
      code: "database_unavailable",
      retryAfter: "2",
    });
    expect(err.message).toMatch(/Nothing was charged/);
  });
});

describe("request deadlines", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("withinDeadline answers 503 when the step outlives the deadline, and tells onFault", async () => {
    const faults: unknown[] = [];
    const result = withinDeadline(
      500,
      () => new Promise(() => {}),
      (err) => faults.push(err),
    );
    const settled = expect(result).rejects.toBeInstanceOf(DatabaseUnavailableError);
    await vi.advanceTimersByTimeAsync(500);
    await settled;
    expect(faults).toHaveLength(1);
  });

  it("withinDeadline turns a transient failure into the 503 and passes a definitive one through", async () => {
    await expect(withinDeadline(500, () => Promise.reject(pgError("ECONNRESET")))).rejects.toBeInstanceOf(DatabaseUnavailableError);
    const definitive = pgError("42P01");
    await expect(withinDeadline(500, () => Promise.reject(definitive))).rejects.toBe(definitive);
  });

  it("readWithinDeadline retries a dead connection after a short pause that doubles, and succeeds within the deadline", async () => {
    const read = vi.fn().mockRejectedValueOnce(pgError("ECONNRESET")).mockRejectedValueOnce(pgError("57P01")).mockResolvedValue("row");
    const result = readWithinDeadline(2_000, read);
    await vi.advanceTimersByTimeAsync(200);
    await expect(result).resolves.toBe("row");
    expect(read).toHaveBeenCalledTimes(3);
  });

  it("readWithinDeadline gives up with the 503 at the deadline and stops retrying", async () => {
    // Its backoff sleeps on node:timers/promises, which fake timers do not drive: this one runs on the clock.
    vi.useRealTimers();
    const read = vi.fn().mockRejectedValue(pgError("ECONNREFUSED"));
    const faults: unknown[] = [];
    await expect(readWithinDeadline(300, read, (err) => faults.push(err))).rejects.toBeInstanceOf(DatabaseUnavailableError);
    const calls = read.mock.calls.length;
    expect(calls).toBeGreaterThan(2);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(read.mock.calls.length).toBeLessThanOrEqual(calls + 1);
    expect(faults).toHaveLength(1);
  });

  it("readWithinDeadline does not repeat a definitive error", async () => {
    const read = vi.fn().mockRejectedValue(pgError("22P02"));
    await expect(readWithinDeadline(1_000, read)).rejects.toMatchObject({ code: "22P02" });
    expect(read).toHaveBeenCalledTimes(1);
  });

  it("waitForDatabase retries transient faults until the database answers, announcing it once", async () => {
    const query = vi
      .fn()
      .mockRejectedValueOnce(pgError("ECONNREFUSED"))
      .mockRejectedValueOnce(pgError("57P03"))
      .mockResolvedValue({ rows: [] });
    const waiting: unknown[] = [];
    const done = waitForDatabase({ query } as unknown as Pool, { timeoutMs: 10_000, onWaiting: (err) => waiting.push(err) });
    await vi.advanceTimersByTimeAsync(1_000);
    await done;
    expect(query).toHaveBeenCalledTimes(3);
    expect(waiting).toHaveLength(1);
  });

  it("waitForDatabase gives up after its timeout, and at once on a definitive error", async () => {
    const down = vi.fn().mockRejectedValue(pgError("ECONNREFUSED"));
    const gaveUp = expect(
      waitForDatabase({ query: down } as unknown as Pool, { timeoutMs: 3_000, onWaiting: () => {} }),
    ).rejects.toMatchObject({ code: "ECONNREFUSED" });
    await vi.advanceTimersByTimeAsync(3_500);
    await gaveUp;
    const wrongPassword = vi.fn().mockRejectedValue(pgError("28P01"));
    await expect(
      waitForDatabase({ query: wrongPassword } as unknown as Pool, { timeoutMs: 3_000, onWaiting: () => {} }),
    ).rejects.toMatchObject({ code: "28P01" });
    expect(wrongPassword).toHaveBeenCalledTimes(1);
  });
});

describe("database health", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("an outage is one warning and one line when it is back, however many failures, with what waited", async () => {
    const { logger, lines } = capture();
    const health = createDatabaseHealth(logger, { graceMs: 1_000 });
    let waiting = 0;
    health.watch("settlements_waiting", () => waiting);
    for (let i = 0; i < 50; i++) {
      waiting = i;
      health.failed(pgError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432 password=secret"), "lease sync");
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(health.up()).toBe(false);
    waiting = 3;
    health.ok();
    health.ok();
    const db = lines.filter((l) => /DATABASE_/.test(l.msg));
    expect(db.map((l) => [l.level, l.msg.split(":")[0]])).toEqual([
      [40, "DATABASE_UNREACHABLE"],
      [30, "DATABASE_BACK"],
    ]);
    expect(db[0]).toMatchObject({ what: "lease sync", code: "ECONNREFUSED" });
    expect(db[1]).toMatchObject({ outage_ms: 5_000, settlements_waiting_peak: 49, settlements_waiting: 3 });
    // The driver's message (which can quote parameters) is never logged.
    expect(JSON.stringify(lines)).not.toContain("secret");
    expect(health.stats()).toMatchObject({ up: true, outages: 1, blips: 0, totalDownMs: 5_000, readings: { settlements_waiting: 3 } });
  });

  it("says what the outage means for clients: the main database's by default, the analytics database's its own", async () => {
    const { logger, lines } = capture();
    const main = createDatabaseHealth(logger, { graceMs: 1_000 });
    const analytics = createDatabaseHealth(logger, { graceMs: 1_000, consequence: "answers go on" });
    main.failed(pgError("ECONNREFUSED"), "lease sync");
    analytics.failed(pgError("ECONNREFUSED"), "request log outbox");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(lines.filter((l) => /DATABASE_UNREACHABLE/.test(l.msg)).map((l) => l.msg)).toEqual([
      "DATABASE_UNREACHABLE: retrying; requests that need it get 503 until it answers",
      "DATABASE_UNREACHABLE: retrying; answers go on",
    ]);
  });

  it("a fault cured within the grace is a blip: counted, not logged", async () => {
    const { logger, lines } = capture();
    const health = createDatabaseHealth(logger, { graceMs: 1_000 });
    health.failed(pgError("ECONNRESET"), "api key lookup");
    await vi.advanceTimersByTimeAsync(300);
    health.ok();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(lines.filter((l) => /DATABASE_/.test(l.msg))).toEqual([]);
    expect(health.stats()).toMatchObject({ up: true, outages: 0, blips: 1 });
  });

  it("at the end of the grace a probe decides: an answer makes it a blip, none an outage", async () => {
    const { logger, lines } = capture();
    let answers = true;
    const health = createDatabaseHealth(logger, { graceMs: 1_000, probe: () => (answers ? Promise.resolve() : new Promise(() => {})) });
    health.failed(pgError("ECONNRESET"), "background worker");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(health.stats()).toMatchObject({ up: true, blips: 1, outages: 0 });
    answers = false;
    health.failed(pgError("ECONNRESET"), "background worker");
    await vi.advanceTimersByTimeAsync(2_000);
    expect(health.stats()).toMatchObject({ up: false, outages: 1 });
    expect(lines.filter((l) => /DATABASE_UNREACHABLE/.test(l.msg))).toHaveLength(1);
  });
});
