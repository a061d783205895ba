import type pg from "pg";
import type { Pool } from "../../src/db/pool.js";

// A pool whose COMMITs of money calls can be made to fail as a connection dropped at the worst moment does
// (docs/architecture.md, "Database faults"): `after` the server committed, so the reply is what is lost, or `before`
// the server got the COMMIT, so the transaction is rolled back when the connection goes. Either way the caller sees
// node-postgres's "Connection terminated unexpectedly" and cannot tell which: exactly the unknown outcome an
// idempotent call must resolve. Only transactions that touched `idempotency_keys` are hit; everything else passes.

export type CommitLoss = "after" | "before";

export interface LossyCommitPool {
  /** The pool to hand to the services. */
  pool: Pool;
  /** The next `count` COMMITs of money calls fail, `when` says how. */
  loseCommits(count: number, when: CommitLoss): void;
  /** COMMITs failed so far. */
  lost(): number;
}

const textOf = (query: unknown): string =>
  typeof query === "string" ? query : typeof query === "object" && query !== null ? String((query as { text?: unknown }).text) : "";

/** Every other member of `target`, as it is (methods bound to it, so that `this` is the real object). */
function passThrough<T extends object>(target: T, prop: string | symbol): unknown {
  const value: unknown = Reflect.get(target, prop, target);
  return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
}

export function lossyCommitPool(pool: Pool): LossyCommitPool {
  let armed = 0;
  let mode: CommitLoss = "after";
  let lost = 0;

  const wrap = (client: pg.PoolClient): pg.PoolClient => {
    let keyed = false;
    const query = async (...args: unknown[]) => {
      const text = textOf(args[0]).trim().toLowerCase();
      if (text === "begin") keyed = false;
      if (text.includes("idempotency_keys")) keyed = true;
      if (text === "commit" && keyed && armed > 0) {
        armed--;
        lost++;
        if (mode === "after") await client.query("commit");
        throw new Error("Connection terminated unexpectedly");
      }
      return (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
    };
    return new Proxy(client, { get: (target, prop) => (prop === "query" ? query : passThrough(target, prop)) });
  };

  const proxied = new Proxy(pool, {
    get: (target, prop) => (prop === "connect" ? async () => wrap(await target.connect()) : passThrough(target, prop)),
  });
  return {
    pool: proxied,
    loseCommits(count, when) {
      armed = count;
      mode = when;
    },
    lost: () => lost,
  };
}
