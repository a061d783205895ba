import { afterAll, beforeAll } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import { createQuotaLedger, registerInstance, type Instance, type QuotaLedger } from "../../src/quota/index.js";
import { createTestDatabase, type TestDatabase } from "./db.js";

export const MAX_HOLD_SECONDS = 3600;

export interface LedgerFixture {
  db: TestDatabase;
  /** A second pool: a second gateway process on the same database. */
  other: Pool;
  ledger: QuotaLedger;
  /** A heartbeating instance for holds of a live process. */
  live: Instance;
  /** Inserts a user on plan "free" and returns its id. */
  newUser(): Promise<string>;
}

/**
 * Registers beforeAll/afterAll hooks that give a describe block a fresh database with a ledger, a second pool
 * and a live instance. With `countAccountUpdates`, a trigger records every row update of quota_accounts in the
 * table account_updates (the hot row's lock is what batching saves).
 */
export function useLedgerFixture(prefix: string, options: { countAccountUpdates?: boolean } = {}): LedgerFixture {
  let users = 0;
  const fixture = {
    async newUser() {
      const { rows } = await fixture.db.pool.query<{ id: string }>(
        "insert into users (email, password_hash, plan) values ($1, 'x', 'free') returning id",
        [`${prefix}-${++users}@example.test`],
      );
      return rows[0]!.id;
    },
  } as LedgerFixture;

  beforeAll(async () => {
    fixture.db = await createTestDatabase();
    fixture.other = createPool(fixture.db.url, 10, () => {});
    fixture.ledger = createQuotaLedger(fixture.db.pool, { maxHoldSeconds: MAX_HOLD_SECONDS });
    fixture.live = await registerInstance(fixture.db.pool);
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
    await fixture.live?.stop();
    await fixture.other?.end();
    await fixture.db?.drop();
  });
  return fixture;
}
