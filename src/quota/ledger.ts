import type { Pool } from "../db/pool.js";
import { noMetrics } from "../metrics/recorders.js";
import { systemClock } from "../time/clock.js";
import { expireRows } from "./expire-sql.js";
import { balance, creditReseller, restore, type LedgerContext } from "./ledger-accounts.js";
import { reserveDurable, resolveDurable } from "./ledger-durable.js";
import { createLedgerEscrows } from "./ledger-escrows.js";
import type { LedgerOptions } from "./ledger-options.js";
import { readResets, useReset } from "./ledger-resets.js";
import { grantResetsRow } from "./resets-sql.js";
import { HoldResolvedError, type QuotaLedger } from "./types.js";

export type { LedgerOptions } from "./ledger-options.js";

// The ledger: an escrow per account kind (escrow.ts, assembled in ledger-escrows.ts) for the requests of this
// process, durable holds (ledger-durable.ts) and restorations (ledger-accounts.ts) as guarded statements, reserve
// resets (ledger-resets.ts), and the expiry. Which escrow serves a reservation is the kind's; nothing here
// switches on a particular kind.

export function createQuotaLedger(pool: Pool, opts: LedgerOptions): QuotaLedger {
  const clock = opts.clock ?? systemClock;
  const instanceTimeoutSeconds = opts.instanceTimeoutSeconds ?? 90;
  const metrics = opts.metrics ?? noMetrics.ledger;
  const ctx: LedgerContext = { pool, clock, configRevision: opts.configRevision ?? 0n };
  const { escrowOf, holding, sweep, flush, close, stats } = createLedgerEscrows(pool, opts, {
    clock,
    configRevision: ctx.configRevision,
    metrics,
  });

  return {
    reserve: (input) => escrowOf(input.kind).reserve(input),

    settle(holdId, charged, record = null, options) {
      // Checked here: a bad charge must not reach the sync it would have joined.
      if (charged < 0n) return Promise.reject(new RangeError(`cannot charge a negative amount (${charged})`));
      const escrow = holding(holdId);
      return escrow ? escrow.resolve(holdId, charged, record, options) : Promise.reject(new HoldResolvedError(holdId));
    },

    async release(holdId, record = null) {
      const escrow = holding(holdId);
      if (!escrow) throw new HoldResolvedError(holdId);
      await escrow.resolve(holdId, null, record);
    },

    reserveDurable: (input) => reserveDurable(ctx, input),
    postDurable(id, charged) {
      if (charged < 0n) return Promise.reject(new RangeError(`cannot charge a negative amount (${charged})`));
      return resolveDurable(ctx, id, charged);
    },
    voidDurable: (id) => resolveDurable(ctx, id, null),
    restore: (input) => restore(ctx, input),

    useReset: (input, client) => useReset(ctx, input, client),
    grantResets: (input, client) => grantResetsRow(client ?? pool, input),
    resets: (userId, weeklyBase, client) => readResets(ctx, userId, weeklyBase, client),

    balance: (ref) => balance(ctx, ref),
    creditReseller: (userId, amount, note, client) => creditReseller(ctx, userId, amount, note, client),

    flush,
    close,
    sweep,
    async expire() {
      const expired = await expireRows(pool, instanceTimeoutSeconds, clock.now());
      metrics.expired(expired.leases, expired.durable);
      return expired;
    },
    stats,
  };
}
