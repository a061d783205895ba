import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { backoffMs, type Backoff } from "../db/backoff.js";
import { faultCode, isDataError, isTransientDbError } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import { inTransaction, transactionOn } from "../db/transaction.js";
import {
  applyRecords,
  deleteDrained,
  quarantine,
  readOutbox,
  readOutboxDepth,
  tryDrainLock,
  type OutboxDepth,
  type OutboxRecord,
} from "./outbox-sql.js";

// Moves the request log's outbox (main database) into the analytics database, exactly once (docs/architecture.md,
// "The request log apart"). One round, in one transaction on the main database: take the drain lock (one drainer
// at a time across processes; a process that does not get it waits for the next round), read the oldest batch,
// apply it on the analytics database in a transaction of its own, delete it from the outbox, commit. A crash or a
// lost connection between the analytics commit and the main commit leaves the batch in the outbox, and the next
// round delivers it again: the analytics side absorbs it (inserts by the log's key, rewrites that set figures).

export interface OutboxDrainerOptions {
  main: Pool;
  analytics: Pool;
  logger: Logger;
  batchSize: number;
  intervalMs: number;
  statementTimeoutMs?: number;
  /** The main database's faults. */
  mainHealth?: DatabaseHealth;
  /** The analytics database's faults. */
  analyticsHealth?: DatabaseHealth;
  /** close() drains for this long at most; what is left stays in the outbox for the next process. */
  closeGraceMs?: number;
}

export interface OutboxStats {
  /** Records this process moved to the analytics database. */
  drained: number;
  /** Records this process moved to the quarantine (refused by the analytics database as data). */
  quarantined: number;
  /** Rounds that failed (a database away); their batch is tried again. */
  failedRounds: number;
  /** The outbox as last measured: records waiting, and the age of the oldest. */
  depth: number;
  lagMs: number;
}

export interface OutboxDrainer {
  /** One round; resolves with the records moved (0 when the outbox is empty or another process drains). */
  drainOnce(): Promise<number>;
  stats(): OutboxStats;
  /** Stops the loop, then drains what is left within the grace. */
  close(): Promise<void>;
}

const RETRY: Backoff = { firstMs: 200, maxMs: 5_000, jitter: true };
const DEPTH_EVERY_MS = 1_000;
const CLOSE_GRACE_MS = 5_000;

/** A failure of the analytics side, told apart from the main database's for the health reports. */
class AnalyticsFault extends Error {
  constructor(readonly fault: unknown) {
    super("analytics database fault", { cause: fault });
  }
}

interface Refused {
  ids: string[];
  code: string;
}

/** Applies `records` on the analytics database; a batch refused as data is split until the refused records stand alone. */
async function apply(analytics: Pool, records: OutboxRecord[], timeoutMs: number | undefined): Promise<Refused[]> {
  try {
    await inTransaction(analytics, (client) => applyRecords(client, records, timeoutMs));
    return [];
  } catch (err) {
    if (!isDataError(err)) throw new AnalyticsFault(err);
    if (records.length === 1) return [{ ids: [records[0]!.id], code: faultCode(err) }];
    const half = Math.ceil(records.length / 2);
    return [...(await apply(analytics, records.slice(0, half), timeoutMs)), ...(await apply(analytics, records.slice(half), timeoutMs))];
  }
}

class Drainer implements OutboxDrainer {
  private readonly log: Logger;
  private readonly counts: OutboxStats = { drained: 0, quarantined: 0, failedRounds: 0, depth: 0, lagMs: 0 };
  private readonly wake = new AbortController();
  private readonly loop: Promise<void>;
  private stopping = false;
  private measuredAt = 0;

  constructor(private readonly opts: OutboxDrainerOptions) {
    this.log = opts.logger.child({ component: "request-log-outbox" });
    this.loop = this.run();
  }

  async drainOnce(): Promise<number> {
    return (await this.round()).moved;
  }

  stats(): OutboxStats {
    return Object.assign({}, this.counts);
  }

  async close(): Promise<void> {
    this.stopping = true;
    this.wake.abort();
    await this.loop;
    const giveUpAt = performance.now() + (this.opts.closeGraceMs ?? CLOSE_GRACE_MS);
    for (let attempt = 0; performance.now() < giveUpAt;) {
      try {
        if (!(await this.round()).full) return;
      } catch (err) {
        this.report(err);
        await sleep(Math.min(backoffMs(attempt++, RETRY), Math.max(0, giveUpAt - performance.now())));
      }
    }
    this.log.warn("request log outbox not drained within the shutdown grace: the next process drains the rest");
  }

  private async run(): Promise<void> {
    for (let attempt = 0; !this.stopping;) {
      let full = false;
      try {
        full = (await this.round()).full;
        await this.measure();
        attempt = 0;
      } catch (err) {
        this.report(err);
        await this.pause(backoffMs(attempt++, RETRY));
        continue;
      }
      if (!full) await this.pause(this.opts.intervalMs);
    }
  }

  private pause(ms: number): Promise<void> {
    return sleep(ms, undefined, { signal: this.wake.signal }).catch(() => {});
  }

  private async round(): Promise<{ moved: number; full: boolean }> {
    const { opts } = this;
    const client = await opts.main.connect();
    const result = await transactionOn(opts.main, client, async (tx) => {
      if (!(await tryDrainLock(tx))) return { moved: 0, full: false };
      const records = await readOutbox(tx, opts.batchSize);
      if (records.length === 0) return { moved: 0, full: false };
      const refused = await apply(opts.analytics, records, opts.statementTimeoutMs);
      const refusedIds = new Set(refused.flatMap((r) => r.ids));
      await deleteDrained(
        tx,
        records.filter((r) => !refusedIds.has(r.id)).map((r) => r.id),
      );
      for (const r of refused) await quarantine(tx, r.ids, r.code);
      if (refusedIds.size > 0) {
        this.counts.quarantined += refusedIds.size;
        this.log.error({ records: refusedIds.size, codes: [...new Set(refused.map((r) => r.code))] }, "REQUEST_LOG_RECORDS_QUARANTINED");
      }
      this.counts.drained += records.length - refusedIds.size;
      return { moved: records.length, full: records.length === opts.batchSize };
    });
    if (result.moved > 0) opts.analyticsHealth?.ok();
    return result;
  }

  private report(err: unknown) {
    this.counts.failedRounds++;
    const fault = err instanceof AnalyticsFault ? err.fault : err;
    const health = err instanceof AnalyticsFault ? this.opts.analyticsHealth : this.opts.mainHealth;
    if (health && isTransientDbError(fault)) health.failed(fault, "request log outbox");
    else this.log.warn({ code: faultCode(fault), failed_rounds: this.counts.failedRounds }, "request log outbox round failed");
  }

  /** The outbox's depth and lag, at most once a second (one count of a table that is small unless a database is away). */
  private async measure() {
    if (performance.now() - this.measuredAt < DEPTH_EVERY_MS) return;
    this.measuredAt = performance.now();
    const depth: OutboxDepth = await readOutboxDepth(this.opts.main, this.opts.statementTimeoutMs);
    this.counts.depth = depth.depth;
    this.counts.lagMs = depth.lagMs;
  }
}

/** Starts draining in the background; every serving process runs one, and one at a time drains. */
export function startOutboxDrainer(opts: OutboxDrainerOptions): OutboxDrainer {
  return new Drainer(opts);
}
