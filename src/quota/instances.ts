import { setTimeout as sleep } from "node:timers/promises";
import { backoffMs, type Backoff } from "../db/backoff.js";
import { isTransientDbError } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool, TimedQuery } from "../db/pool.js";
import type { Instance } from "./types.js";

// A gateway process as the ledger knows it: a row of gateway_instances whose heartbeat keeps its leases alive.
//
// Fencing (docs/billing.md, "Crashes and every timeout"). The expiry fences a process silent for
// quota.instance_timeout_seconds: it sets `fenced_at` on the process's row in a statement of its own, under the
// row's lock and after reading the heartbeat again on the latest row, and only then expires the fenced processes'
// leases. A beat or a sync that renews the heartbeat writes the same row, only while it is not fenced: either it
// commits first (and the fence, reading the heartbeat after it, does not happen), or it finds the row fenced and is
// told so. A fenced process drops every lease it holds and registers again under a new id before it admits
// anything: nothing is admitted from units the expiry gave back. A fenced row stays fenced for good; the expiry
// forgets it a day later.
//
// The database marks a heartbeat with its own clock, which is no earlier than when the beat was sent; so until
// `timeoutMs` after sending the last acknowledged beat, no other process can have fenced this one. A lease admits
// from its free units only while that is comfortably so (`fresh()`: one heartbeat interval of margin); otherwise it
// asks the database, whose sync renews the heartbeat and answers whether the process is still live. Beats also
// measure the database's clock against this process's (`clockOffsetMs`), so that every process picks the same day.

const REGISTER = `insert into gateway_instances default values returning id, (extract(epoch from clock_timestamp()) * 1000)::float8 as db_ms`;

const HEARTBEAT = `
update gateway_instances set last_seen_at = now() where id = $1::uuid and fenced_at is null
returning (extract(epoch from clock_timestamp()) * 1000)::float8 as db_ms`;

const REGISTER_RETRY: Backoff = { firstMs: 50, maxMs: 2_000 };

export interface InstanceOptions {
  heartbeatMs: number;
  /** Another process fences this one once its heartbeat is this old (quota.instance_timeout_seconds). */
  timeoutMs: number;
  /** A beat whose answer takes longer is abandoned (the next one comes anyway). */
  statementTimeoutMs?: number;
  /** Transient failures of a beat are reported here (once per outage) instead of to onError. */
  health?: DatabaseHealth;
  onError?: (err: Error) => void;
  /** This process was fenced and registers again under a new id (logged by the caller). */
  onFenced?: (fencedId: string) => void;
}

/**
 * Makes this process known to the ledger: its leases stay pending while its heartbeat is fresh. stop() deletes
 * the row so that anything it left unresolved expires on the next expiry run.
 */
export async function registerInstance(pool: Pool, opts: InstanceOptions): Promise<Instance> {
  const instance = new GatewayInstance(pool, opts);
  await instance.ready();
  instance.startBeating();
  return instance;
}

class GatewayInstance implements Instance {
  private currentId = "";
  private ackedSentAt = 0;
  private offsetMs = 0;
  private isFenced = false;
  private stopped = false;
  private beating: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopping: Promise<void> | undefined;
  private readonly listeners: (() => void)[] = [];
  private registered: Promise<string>;

  constructor(
    private readonly pool: Pool,
    private readonly opts: InstanceOptions,
  ) {
    this.registered = this.register();
  }

  get id(): string {
    return this.currentId;
  }

  fresh(): boolean {
    return !this.isFenced && performance.now() - this.ackedSentAt < this.opts.timeoutMs - this.opts.heartbeatMs;
  }

  beaten(at: number): void {
    if (!this.isFenced && at > this.ackedSentAt) this.ackedSentAt = at;
  }

  /** The database said this process was fenced: every lease is dropped, and the process registers again. */
  fenced(): void {
    if (this.isFenced || this.stopped) return;
    this.isFenced = true;
    this.opts.onFenced?.(this.currentId);
    for (const listener of this.listeners) listener();
    this.registered = this.reregister();
    // Only shutdown ends the retries; reservations waiting for the id then fail with the process.
    this.registered.catch(() => {});
  }

  onFenced(listener: () => void): void {
    this.listeners.push(listener);
  }

  ready(): Promise<string> {
    return this.registered;
  }

  clockOffsetMs(): number {
    return this.offsetMs;
  }

  startBeating(): void {
    this.timer = setInterval(() => this.beat(), this.opts.heartbeatMs);
    this.timer.unref();
  }

  stop(): Promise<void> {
    return (this.stopping ??= (async () => {
      this.stopped = true;
      clearInterval(this.timer);
      // A beat still in flight would otherwise renew the row after the delete.
      await this.beating;
      await this.registered.catch(() => {});
      await this.pool.query("delete from gateway_instances where id = $1", [this.currentId]);
    })());
  }

  /** The database's clock against ours, from a statement sent at `sentWall` (Date.now()) that read it. */
  private measure(dbMs: number, sentWall: number): void {
    this.offsetMs = dbMs - (sentWall + Date.now()) / 2;
  }

  private async register(): Promise<string> {
    const sentAt = performance.now();
    const sentWall = Date.now();
    const { rows } = await this.pool.query<{ id: string; db_ms: number }>(REGISTER);
    this.currentId = rows[0]!.id;
    this.measure(rows[0]!.db_ms, sentWall);
    this.ackedSentAt = sentAt;
    this.isFenced = false;
    return this.currentId;
  }

  /**
   * Registers again under a new id, retrying every failure for as long as the process lives (a serving process
   * that gave up here would never admit again): transient faults are reported as such, anything else to onError.
   */
  private async reregister(): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.register();
      } catch (err) {
        if (this.stopped) throw err;
        if (this.opts.health && isTransientDbError(err)) this.opts.health.failed(err, "instance registration");
        else this.opts.onError?.(err as Error);
        await sleep(backoffMs(attempt, REGISTER_RETRY));
      }
    }
  }

  private beat(): void {
    if (this.isFenced) return;
    const id = this.currentId;
    const at = performance.now();
    const sentWall = Date.now();
    // A slow database must not pile up beats on the pool.
    const query: TimedQuery = {
      name: "quota_heartbeat",
      text: HEARTBEAT,
      values: [id],
      query_timeout: this.opts.statementTimeoutMs,
    };
    this.beating ??= this.pool
      .query<{ db_ms: number }>(query)
      .then(
        ({ rows }) => {
          this.opts.health?.ok();
          // A beat of an id fenced and replaced meanwhile says nothing about the new one.
          if (id !== this.currentId) return;
          if (!rows[0]) return this.fenced();
          this.measure(rows[0].db_ms, sentWall);
          this.beaten(at);
        },
        (err: Error) => {
          if (this.opts.health && isTransientDbError(err)) this.opts.health.failed(err, "heartbeat");
          else this.opts.onError?.(err);
        },
      )
      .finally(() => {
        this.beating = undefined;
      });
  }
}
