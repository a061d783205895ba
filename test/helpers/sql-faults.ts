import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { inject, onTestFinished } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { withAdmin } from "./admin-db.js";
import type { PgFaultProxy } from "./pg-fault-proxy.js";

// The database's ordinary SQL-level faults, made for real on one test database (docs/architecture.md, "Database
// faults"), beside the TCP faults of pg-fault-proxy.ts: what a failover to a standby answers (25006), a server
// statement_timeout or pg_cancel_backend (57014), a migration's lock (55P03), a full disk (53100).
//
// Decisions the brief left open:
// - A setting given to the database (ALTER DATABASE … SET) reaches only sessions opened after it, and a pool keeps
//   its sessions for long. So every setting fault (read-only, statement_timeout, lock_timeout) also terminates the
//   database's existing sessions when it starts, as the failover or pooler restart that brings such a setting
//   does; and when it ends, after the setting is back, it terminates the sessions opened meanwhile, since they
//   keep what they read at their start for their whole life.
// - Sessions are told apart by `backend_start` on the server's clock: one that read the faulty setting was forked
//   before the setting was restored. A session is listed in pg_stat_activity only once it has started, so the
//   end terminates twice, a moment apart, to take the late ones too.
// - The setting a database had before is put back as it was (usually: none), never just reset.
// - The fault's own connections and the test's observer are spared: sessions whose application_name starts with
//   `sql-faults-` are neither terminated nor cancelled, and the observer's startup options override the database's
//   settings (a monitor on another road, which the test needs to see the ledger while the fault runs).
// - statementTimeoutFor defaults to 1 ms, the least the server takes: a lease sync, or any write with its index
//   updates, takes longer and fails; a trivial statement may still finish within it, as it would on the server.
// - lockTimeoutFor defaults to a lock_timeout of 100 ms, a migration tool's usual few hundred ms or less.
// - injectAtPool refuses, by default, every statement; `when` narrows it (writesData: what a full disk refuses,
//   since reads need no new space). It patches the clients the pool hands out (pool.query runs on one too) from
//   the moment the fault starts; a statement of a client checked out before then is not refused.
// - Every fault is ended when the test that started it finishes, whatever its outcome (onTestFinished), so a
//   helper must be called inside a test; `end()` ends it earlier.

/** application_name prefix of the sessions the faults never touch. */
const SPARED = "sql-faults-";
const OBSERVER = `${SPARED}observer`;
const LOCKER = `${SPARED}locker`;
/** Startup options that override a database's settings (a client's options take precedence over them). */
const IMMUNE = "-c default_transaction_read_only=off -c statement_timeout=0 -c lock_timeout=0";
/** How long an end waits for sessions that started while the fault's setting was in place to show. */
const LATE_SESSION_MS = 200;
/** How long pg_terminate_backend waits for a session to be gone. */
const TERMINATE_WAIT_MS = 5_000;

export interface FaultStats {
  /** Sessions terminated (when the fault started and when it ended). */
  terminated: number;
  /** Cancel signals sent to active statements. */
  cancelled: number;
  /** Statements refused before they were sent. */
  refused: number;
  /** Statements that committed and whose answer was replaced by a lost connection's error. */
  lost: number;
}

export interface SqlFault {
  /** Resolves once the fault is in place (rejects when it could not be applied). */
  readonly applied: Promise<void>;
  /** Resolves once the fault has ended and the database is as it was; rejects when the fault or its end failed. */
  readonly over: Promise<void>;
  /** Ends the fault now if it still runs, and waits for the restore. */
  end(): Promise<void>;
  stats(): FaultStats;
}

/** What a fault needs of a test database. */
export type FaultedDatabase = { url: string };

type Undo = () => Promise<unknown>;

/**
 * Applies a fault, keeps it `ms` (or until end()), then undoes what was applied, in reverse order, also when
 * applying failed halfway.
 */
function timedFault(ms: number, apply: (undo: (fn: Undo) => void, stats: FaultStats, endNow: () => void) => Promise<void>): SqlFault {
  const stats: FaultStats = { terminated: 0, cancelled: 0, refused: 0, lost: 0 };
  const undos: Undo[] = [];
  const early = new AbortController();
  const end = () => {
    early.abort();
    return over;
  };
  // First, so that outside a test nothing is applied: onTestFinished throws there.
  onTestFinished(end);
  const applied = apply(
    (fn) => undos.push(fn),
    stats,
    () => early.abort(),
  );
  const over = (async () => {
    let failure: unknown;
    try {
      await applied;
      await sleep(ms, undefined, { signal: early.signal }).catch(() => {});
    } catch (err) {
      failure = err;
    }
    for (const undo of undos.reverse()) {
      try {
        await undo();
      } catch (err) {
        failure ??= err;
      }
    }
    if (failure !== undefined) throw failure;
  })();
  // Whoever awaits `over` or end() hears of a failure; nobody else must turn it into an unhandled rejection.
  over.catch(() => {});
  applied.catch(() => {});
  return { applied, over, end, stats: () => ({ ...stats }) };
}

const databaseName = (db: FaultedDatabase) => decodeURIComponent(new URL(db.url).pathname.slice(1));

const admin = <T>(fn: (client: pg.Client) => Promise<T>) => withAdmin(inject("adminDatabaseUrl"), fn);

/** Server time now, as the text PostgreSQL gave (compared with backend_start on the server). */
async function serverNow(client: pg.Client): Promise<string> {
  return (await client.query<{ now: string }>("select clock_timestamp()::text as now")).rows[0]!.now;
}

/**
 * Terminates the client sessions of `database` (all of them, or those that started within [from, to]) except the
 * spared ones, and waits for each to be gone. Returns how many.
 */
async function terminate(client: pg.Client, database: string, from: string | null = null, to: string | null = null): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `select count(*) filter (where pg_terminate_backend(pid, $4))::int as n from pg_stat_activity
     where datname = $1 and pid <> pg_backend_pid() and backend_type = 'client backend'
       and coalesce(application_name, '') not like $5 || '%'
       and ($2::timestamptz is null or backend_start >= $2::timestamptz)
       and ($3::timestamptz is null or backend_start <= $3::timestamptz)`,
    [database, from, to, TERMINATE_WAIT_MS, SPARED],
  );
  return rows[0]!.n;
}

/** The value `setting` has on `database` itself (ALTER DATABASE … SET, for every role), or null. */
async function databaseSetting(client: pg.Client, database: string, setting: string): Promise<string | null> {
  const { rows } = await client.query<{ value: string | null }>(
    `select (select substr(entry, length($2) + 2) from unnest(s.setconfig) entry where entry like $2 || '=%') as value
     from pg_db_role_setting s join pg_database d on d.oid = s.setdatabase
     where d.datname = $1 and s.setrole = 0`,
    [database, setting],
  );
  return rows[0]?.value ?? null;
}

async function setDatabase(client: pg.Client, database: string, setting: string, value: string | null): Promise<void> {
  const target = `alter database ${pg.escapeIdentifier(database)}`;
  await client.query(value === null ? `${target} reset ${setting}` : `${target} set ${setting} = ${pg.escapeLiteral(value)}`);
}

/**
 * New sessions of `db` get `setting = value`, the existing ones are terminated; at the end the setting is put
 * back and the sessions that started meanwhile are terminated.
 */
function settingFault(db: FaultedDatabase, ms: number, setting: string, value: string, more?: (undo: (fn: Undo) => void) => Promise<void>) {
  const database = databaseName(db);
  return timedFault(ms, async (undo, stats) => {
    const { before, since } = await admin(async (c) => {
      const before = await databaseSetting(c, database, setting);
      const since = await serverNow(c);
      await setDatabase(c, database, setting, value);
      return { before, since };
    });
    undo(() =>
      admin(async (c) => {
        await setDatabase(c, database, setting, before);
        const restoredAt = await serverNow(c);
        stats.terminated += await terminate(c, database, since, restoredAt);
        await sleep(LATE_SESSION_MS);
        stats.terminated += await terminate(c, database, since, restoredAt);
      }),
    );
    // Every session that may have read the setting as it was (some that did not, too).
    stats.terminated += await admin(async (c) => terminate(c, database, null, await serverNow(c)));
    await more?.(undo);
  });
}

/**
 * A failover to a standby, for `ms`: the existing sessions are terminated and new ones are read-only (writes
 * fail with 25006); then the primary is back (the setting reset, the read-only sessions terminated).
 */
export function readOnlyFor(db: FaultedDatabase, ms: number): SqlFault {
  return settingFault(db, ms, "default_transaction_read_only", "on");
}

/** A server-side statement_timeout, for `ms`: statements of new sessions running longer than `timeout` fail with 57014. */
export function statementTimeoutFor(db: FaultedDatabase, ms: number, timeout = "1ms"): SqlFault {
  return settingFault(db, ms, "statement_timeout", timeout);
}

/**
 * A migration, for `ms`: sessions get `lockTimeout` (100 ms unless told) and another connection holds an ACCESS
 * EXCLUSIVE lock on `table`, so every statement that touches the table fails with 55P03 once it waited that long.
 */
export function lockTimeoutFor(db: FaultedDatabase, ms: number, opts: { table: string; lockTimeout?: string }): SqlFault {
  return settingFault(db, ms, "lock_timeout", opts.lockTimeout ?? "100ms", async (undo) => {
    const locker = new pg.Client({ connectionString: db.url, application_name: LOCKER, options: IMMUNE });
    locker.on("error", () => {});
    await locker.connect();
    undo(() => locker.end());
    await locker.query("begin");
    undo(() => locker.query("rollback"));
    // Waits for the statements that use the table now, as a migration's ALTER does.
    await locker.query(`lock table ${pg.escapeIdentifier(opts.table)} in access exclusive mode`);
  });
}

/**
 * Cancels (pg_cancel_backend) every active statement of `db`'s sessions every `everyMs`, for `forMs`: each fails
 * with 57014, as when an operator or a watchdog cancels them.
 */
export function cancelLoop(db: FaultedDatabase, everyMs: number, forMs: number): SqlFault {
  const database = databaseName(db);
  return timedFault(forMs, async (undo, stats) => {
    const client = new pg.Client({ connectionString: inject("adminDatabaseUrl"), application_name: `${SPARED}canceller` });
    client.on("error", () => {});
    await client.connect();
    undo(() => client.end());
    let running = true;
    const loop = (async () => {
      while (running) {
        const { rows } = await client.query<{ n: number }>(
          `select count(*) filter (where pg_cancel_backend(pid))::int as n from pg_stat_activity
           where datname = $1 and pid <> pg_backend_pid() and backend_type = 'client backend' and state = 'active'
             and coalesce(application_name, '') not like $2 || '%'`,
          [database, SPARED],
        );
        stats.cancelled += rows[0]!.n;
        await sleep(everyMs);
      }
    })();
    undo(async () => {
      running = false;
      await loop;
    });
  });
}

/** A network that loses every packet, for `ms`, between the proxy's clients and PostgreSQL (pg-fault-proxy.ts). */
export function stallFor(proxy: PgFaultProxy, ms: number): SqlFault {
  return timedFault(ms, async (undo) => {
    proxy.stall();
    undo(async () => proxy.resume());
  });
}

/** A statement as a pool's client is given it. */
export interface Statement {
  text: string;
  name?: string;
}

/** Statements that change data: what a full disk refuses (a read needs no new space). */
export const writesData = (s: Statement) => /\b(insert|update|delete|merge)\b/i.test(s.text);

/** An error as PostgreSQL sends it (pg.DatabaseError, with its SQLSTATE), for statements that were never sent. */
function serverError(code: string): pg.DatabaseError {
  const message = code === "53100" ? 'could not extend file "base/16384/16385": No space left on device' : `injected SQLSTATE ${code}`;
  const err = new pg.DatabaseError(message, message.length, "error");
  err.severity = "ERROR";
  err.code = code;
  if (code === "53100") err.hint = "Check free disk space.";
  return err;
}

const statementOf = (arg: unknown): Statement | undefined => {
  if (typeof arg === "string") return { text: arg };
  if (arg !== null && typeof arg === "object" && typeof (arg as Statement).text === "string" && !("submit" in arg)) return arg as Statement;
  return undefined;
};

type Query = (this: pg.PoolClient, ...args: unknown[]) => unknown;

/**
 * Wraps the `query` of every client `pool` hands out from now on (pool.query runs on one too) with `wrap`; the
 * returned function puts each client's own `query` back as it was, unless another fault wrapped it since (then
 * ours stays, passing every statement through: the caller turns it off first).
 */
function wrapClients(pool: Pool, wrap: (query: Query) => Query): () => void {
  const own = new Map<pg.PoolClient, { descriptor: PropertyDescriptor | undefined; wrapped: Query }>();
  const patch = (client: pg.PoolClient) => {
    if (own.has(client)) return;
    const wrapped = wrap(client.query as Query);
    own.set(client, { descriptor: Object.getOwnPropertyDescriptor(client, "query"), wrapped });
    client.query = wrapped as pg.PoolClient["query"];
  };
  pool.on("acquire", patch);
  return () => {
    pool.off("acquire", patch);
    for (const [client, { descriptor, wrapped }] of own) {
      if ((client.query as Query) !== wrapped) continue;
      if (descriptor) Object.defineProperty(client, "query", descriptor);
      else delete (client as Partial<pg.PoolClient>).query;
    }
  };
}

/**
 * The statements `when` selects (default: all) of `pool`'s clients, for `forMs` or until `times` of them (then the
 * fault ends), are answered by `hit` instead of `query`, counted in `stats[counted]`.
 */
function atPool(
  pool: Pool,
  opts: { forMs: number; times?: number; when?: (s: Statement) => boolean },
  counted: "refused" | "lost",
  hit: (query: Query, client: pg.PoolClient, args: unknown[]) => unknown,
): SqlFault {
  const when = opts.when ?? (() => true);
  return timedFault(opts.forMs, async (undo, stats, endNow) => {
    let on = true;
    const restore = wrapClients(
      pool,
      (query) =>
        function (this: pg.PoolClient, ...args: unknown[]) {
          const statement = statementOf(args[0]);
          if (!on || !statement || !when(statement)) return query.apply(this, args);
          if (++stats[counted] === opts.times) {
            on = false;
            endNow();
          }
          return hit(query, this, args);
        },
    );
    undo(async () => {
      on = false;
      restore();
    });
  });
}

const lostConnection = () => new Error("Connection terminated unexpectedly");

/**
 * For `forMs`, the statements `when` selects (default: all) of `pool`'s clients are refused before they are sent,
 * with a pg.DatabaseError carrying `code` (53100: disk full), so they certainly did not commit; with `code: null`,
 * with the driver's error for a connection lost under a statement (no SQLSTATE at all). With `times`, the fault
 * ends once it has refused that many (a blip that does not depend on how fast a loaded machine gets there).
 * In-process only.
 */
export function injectAtPool(
  pool: Pool,
  opts: { code: string | null; forMs: number; times?: number; when?: (s: Statement) => boolean },
): SqlFault {
  return atPool(pool, opts, "refused", (_query, _client, args) => {
    const err = opts.code === null ? lostConnection() : serverError(opts.code);
    const callback = args.at(-1);
    if (typeof callback === "function") return void process.nextTick(callback, err);
    return Promise.reject(err);
  });
}

/**
 * The first `times` statements `when` selects (within `forMs`) run and commit, and their caller gets the driver's
 * error for a connection lost under a statement instead of the answer: the outcome it cannot know. In-process only.
 */
export function loseReplies(pool: Pool, opts: { times: number; forMs: number; when: (s: Statement) => boolean }): SqlFault {
  return atPool(pool, opts, "lost", (query, client, args) => {
    const lost = lostConnection();
    const callback = args.at(-1);
    if (typeof callback === "function") {
      args[args.length - 1] = (err: unknown) => (callback as (err: unknown) => void)(err ?? lost);
      return query.apply(client, args);
    }
    return (query.apply(client, args) as Promise<unknown>).then(() => Promise.reject(lost));
  });
}

/** What a failed statement says: its SQLSTATE, else the driver's message (a client-side timeout, a lost connection). */
const failureOf = (err: unknown) => String((err as { code?: unknown }).code ?? (err as { message?: unknown }).message);

/**
 * Counts, by SQLSTATE (or message), the statements of `pool`'s clients that fail from now on, so a test can tell
 * that a fault reached the code under test. `stop()` unwraps the clients.
 */
export function failuresAt(pool: Pool): { counts(): Record<string, number>; stop(): void } {
  const counts: Record<string, number> = {};
  const count = (err: unknown) => void (counts[failureOf(err)] = (counts[failureOf(err)] ?? 0) + 1);
  const stop = wrapClients(
    pool,
    (query) =>
      function (this: pg.PoolClient, ...args: unknown[]) {
        const callback = args.at(-1);
        if (typeof callback === "function") {
          args[args.length - 1] = (err: unknown, ...rest: unknown[]) => {
            if (err) count(err);
            return (callback as (...a: unknown[]) => unknown)(err, ...rest);
          };
          return query.apply(this, args);
        }
        const result = query.apply(this, args);
        if (result instanceof Promise) result.catch(count);
        return result;
      },
  );
  return { counts: () => ({ ...counts }), stop };
}

/**
 * A pool for the test's own reads while a fault runs: its sessions are spared by every fault and override the
 * database's settings (not read-only, no statement or lock timeout). A lock still makes its reads wait.
 */
export function observerPool(db: FaultedDatabase, max = 2): Pool {
  const pool = new pg.Pool({ connectionString: db.url, max, application_name: OBSERVER, options: IMMUNE });
  pool.on("error", () => {});
  return pool;
}
