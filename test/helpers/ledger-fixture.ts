import { afterAll, beforeAll } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import {
  createQuotaLedger,
  ManualClock,
  registerInstance,
  type Instance,
  type LedgerOptions,
  type QuotaLedger,
} from "../../src/quota/index.js";
import { createTestDatabase, type TestDatabase } from "./db.js";
import type { SyncLease } from "../../src/quota/lease-sql.js";

export const MAX_HOLD_SECONDS = 3600;

/** A heartbeat that never beats on its own within a test, with the default timeout's margin. */
export const QUIET_INSTANCE = { heartbeatMs: 3_600_000, timeoutMs: 4 * 3_600_000 };

export interface LedgerFixture {
  db: TestDatabase;
  /** A second pool: a second gateway process on the same database. */
  other: Pool;
  /** The clock every ledger of the fixture reads (starts at the real time; tests move it). */
  clock: ManualClock;
  /** The first process's ledger, on the live instance. */
  ledger: QuotaLedger;
  /** A heartbeating instance for holds of a live process. */
  live: Instance;
  /** Inserts a user on plan "free" and returns its id. */
  newUser(): Promise<string>;
  /** Another process: its own instance (unless given) and ledger on `pool` (the second pool by default). */
  process(options?: Partial<LedgerOptions> & { pool?: Pool }): Promise<{ ledger: QuotaLedger; instance: Instance }>;
}

/**
 * Registers beforeAll/afterAll hooks that give a describe block a fresh database with a ledger, a second pool
 * and a live instance. With `countAccountUpdates`, a trigger records every row update of quota_accounts in the
 * table account_updates (the hot row's lock is what batching saves).
 */
export function useLedgerFixture(prefix: string, options: { countAccountUpdates?: boolean } = {}): LedgerFixture {
  let users = 0;
  const instances: Instance[] = [];
  const ledgers: QuotaLedger[] = [];
  const fixture = {
    clock: new ManualClock(new Date()),
    async newUser() {
      const { rows } = await fixture.db.pool.query<{ id: string }>(
        "insert into users (email, password_hash, plan) values ($1, 'x', 'free') returning id",
        [`${prefix}-${++users}@example.test`],
      );
      return rows[0]!.id;
    },
    async process(opts: Partial<LedgerOptions> & { pool?: Pool } = {}) {
      const pool = opts.pool ?? fixture.other;
      const instance = opts.instance ?? (await registerInstance(pool, QUIET_INSTANCE));
      if (!opts.instance) instances.push(instance);
      const ledger = createQuotaLedger(pool, {
        maxHoldSeconds: MAX_HOLD_SECONDS,
        clock: fixture.clock,
        ...opts,
        instance,
      });
      ledgers.push(ledger);
      return { ledger, instance };
    },
  } as LedgerFixture;

  beforeAll(async () => {
    fixture.db = await createTestDatabase();
    fixture.other = createPool(fixture.db.url, 10, () => {});
    fixture.live = await registerInstance(fixture.db.pool, QUIET_INSTANCE);
    fixture.ledger = (await fixture.process({ pool: fixture.db.pool, instance: fixture.live })).ledger;
    if (options.countAccountUpdates) {
      await fixture.db.pool.query(`
        create table account_updates (account_id bigint not null);
        create function count_account_update() returns trigger language plpgsql as
          $$ begin insert into account_updates values (new.id); return new; end $$;
        create trigger count_account_updates after update on quota_accounts
          for each row execute function count_account_update();`);
    }
  });
  afterAll(async () => {
    await Promise.allSettled(ledgers.map((l) => l.close()));
    await Promise.allSettled(instances.map((i) => i.stop()));
    await fixture.live?.stop();
    await fixture.other?.end();
    await fixture.db?.drop();
  });
  return fixture;
}

/**
 * A full sync of lease `leaseId` at `seq` under `instanceId`, on an account of 1000 credits (or `base`): asks for 100
 * plus up to 400 of headroom, and posts, gives back and closes nothing. Tests change what they need.
 */
export function fullSyncOf(leaseId: string, seq: number, instanceId: string, base: bigint | null = 1000n): SyncLease {
  return {
    leaseId,
    seq,
    instanceId,
    base,
    baseRevision: 0n,
    post: 0n,
    take: 0n,
    giveBack: 0n,
    need: 100n,
    headroom: 400n,
    close: false,
    touch: false,
    resolutions: [],
  };
}
