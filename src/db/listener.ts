import pg from "pg";
import type { Logger } from "pino";
import { extended } from "../objects.js";
import { isTransientDbError } from "./faults.js";
import type { DatabaseHealth } from "./health.js";
import type { Pool } from "./pool.js";

// One LISTEN connection per serving process, shared by whatever learns from other processes through NOTIFY (the
// key cache's revocations, the ledger's give-back requests). A connection of its own, outside the pool: it holds
// its session for as long as the process lives, and reconnects with backoff when it is lost. While it is lost,
// notifications are missed: each subscriber hears when it stops and when it starts listening again, and decides
// what that means for it (the key cache drops everything it cached).

const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

export interface Listener {
  /** Calls `handler` with the payload of every notification on `channel`. */
  on(channel: string, handler: (payload: string) => void): void;
  /** Calls `handler` with true once listening (again), false when the connection is lost. */
  onState(handler: (listening: boolean) => void): void;
  listening(): boolean;
  /** Sends a notification on `channel` (on the pool: it is delivered when the statement commits). */
  notify(channel: string, payload: string): Promise<void>;
  close(): Promise<void>;
}

export interface ListenerOptions {
  pool: Pool;
  logger: Logger;
  /** Where a lost connection is reported when the database is away (one line per outage, not per retry). */
  health?: DatabaseHealth;
}

class PgListener implements Listener {
  private readonly handlers = new Map<string, ((payload: string) => void)[]>();
  private readonly states: ((listening: boolean) => void)[] = [];
  private client: pg.Client | null = null;
  private up = false;
  private retryMs = RETRY_MIN_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly opts: ListenerOptions) {}

  on(channel: string, handler: (payload: string) => void): void {
    const list = this.handlers.get(channel);
    if (list) return void list.push(handler);
    this.handlers.set(channel, [handler]);
    // Listening already: the new channel is added now (a lost connection adds it again when it is back).
    const client = this.client;
    if (this.up && client) client.query(`LISTEN ${pg.escapeIdentifier(channel)}`).catch((err: Error) => this.lost(client, err));
  }

  onState(handler: (listening: boolean) => void): void {
    this.states.push(handler);
  }

  listening(): boolean {
    return this.up;
  }

  async notify(channel: string, payload: string): Promise<void> {
    await this.opts.pool.query("select pg_notify($1, $2)", [channel, payload]);
  }

  async start(): Promise<void> {
    const client = new pg.Client(extended(this.opts.pool.options, { keepAlive: true }));
    this.client = client;
    client.on("notification", (msg) => {
      if (msg.payload === undefined) return;
      for (const handler of this.handlers.get(msg.channel) ?? []) handler(msg.payload);
    });
    client.on("error", (err) => this.lost(client, err));
    client.on("end", () => this.lost(client, new Error("connection ended")));
    try {
      await client.connect();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      this.lost(client, err as Error);
      return;
    }
    if (this.client !== client) {
      // close() ran while we were connecting.
      await client.end().catch(() => {});
      return;
    }
    this.up = true;
    this.retryMs = RETRY_MIN_MS;
    this.opts.health?.ok();
    for (const state of this.states) state(true);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = null;
    if (this.up) {
      this.up = false;
      for (const state of this.states) state(false);
    }
    await client?.end().catch(() => {});
  }

  private lost(client: pg.Client, err: Error) {
    if (this.client !== client) return;
    this.client = null;
    const wasUp = this.up;
    this.up = false;
    client.end().catch(() => {});
    if (wasUp) for (const state of this.states) state(false);
    if (this.closed) return;
    if (this.opts.health && isTransientDbError(err)) this.opts.health.failed(err, "LISTEN connection");
    else this.opts.logger.warn({ err, retry_ms: this.retryMs }, "LISTEN connection lost; notifications are missed until it is back");
    this.retryTimer = setTimeout(() => void this.start(), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
  }
}

/** A listener, listening once it resolves (or retrying in the background when the database is away). */
export async function startListener(opts: ListenerOptions): Promise<Listener> {
  const listener = new PgListener(opts);
  await listener.start();
  return listener;
}
