// What the gateway records for GET /metrics, as the layers that record see it: narrow interfaces passed in as
// dependencies (docs/architecture.md, "Rules": no module-level registry), one Prometheus implementation per gateway instance
// (prometheus.ts) and a no-op for when metrics are off, so that recording costs an empty call then.
// Gauges (queues, budgets, leases, the database's health) are not recorded at all: they are read from their
// owners at scrape time (ScrapeSources), so the hot path never updates them.

/** Requests as answered, counted by the app's middleware (src/server/request-metrics.ts). */
export interface RequestMetrics {
  /**
   * One answered request: the route pattern that answered it, the public model ID and client protocol a metered
   * route saw (undefined elsewhere), the HTTP status. Label values are bounded here.
   */
  request(route: string, model: string | undefined, protocol: string | undefined, status: number): void;
}

/** The upstream calls of the metering path (src/metering/meter.ts). */
export interface UpstreamMetrics {
  /** The target that answered: seconds from sending its request to its first usable answer. */
  answered(provider: string, seconds: number): void;
  /** The answering target's request is over (a JSON answer delivered, a stream relayed to its end). */
  ended(provider: string, seconds: number): void;
  /** `provider` failed (the UpstreamError's `failure` and `status`) and the next target is tried. */
  fallback(provider: string, failure: string, status: number | null): void;
}

/** One account kind's holds and leases (src/quota/escrow.ts, lease-settlement.ts, lease-sync-attempts.ts); bound to the kind once. */
export interface AccountMetrics {
  held(): void;
  /** A hold posted `charged`; above `held`, the settlement is an overshoot (docs/architecture.md, "Rules"). */
  posted(charged: bigint, held: bigint): void;
  voided(): void;
  /** A request held its units longer than quota.max_hold_seconds: they were freed. */
  expired(): void;
  /** A lease sync committed, `seconds` after it was first sent (retries included). */
  synced(seconds: number): void;
  /**
   * A reservation that did not fit its lease's free units got its answer (admitted, refused, or 503) `seconds` after
   * it arrived: the time it waited for a sync. Not called for the reservations admitted at once.
   */
  waited(seconds: number): void;
  /** A lease sync got a definitive error: the lease ended and its charges post straight to the account. */
  syncFailed(): void;
  /** A charge was withdrawn: not committed by its request's deadline, its answer refused and nothing charged. */
  withdrawn(): void;
}

export interface LedgerMetrics {
  account(kind: string): AccountMetrics;
  /** The expiry ended dead processes' leases and overdue durable holds. */
  expired(leases: number, durableHolds: number): void;
}

/** What the gauges read at scrape time; structural, so that this layer imports none of their owners. */
export interface ScrapeSources {
  requestLog: { stats(): { buffered: number; dropped: number } };
  bodyBudget: { readonly capacity: number; inUse(): number };
  health: { stats(): { up: boolean; outages: number; blips: number; downMs: number; totalDownMs: number } };
  ledger: { stats(): LedgerStats };
  /** The request log's outbox drainer, when the log lives apart. */
  outbox?: { stats(): { depth: number; lagMs: number; quarantined: number } } | undefined;
}

/** This process's share of the ledger now. */
export interface LedgerStats {
  /** Settlements not yet committed (the database is slow or away). */
  unsynced: number;
  accounts: readonly AccountStats[];
}

export interface AccountStats {
  kind: string;
  /** Open leases of this process. */
  leases: number;
  /** Requests holding units now, and the units they hold. */
  holds: number;
  held: bigint;
  /** Leased units no request holds. */
  free: bigint;
  /** Since the start: reservations that waited for a sync (escrow.ts), and lease syncs committed. */
  waits: number;
  syncs: number;
}

/** The Prometheus text of every metric. */
export interface Exposition {
  readonly contentType: string;
  scrape(): Promise<string>;
}

export interface Metrics {
  readonly requests: RequestMetrics;
  readonly upstream: UpstreamMetrics;
  readonly ledger: LedgerMetrics;
  /** Binds the gauges to their owners, which are built after the recorders they are given. */
  watch(sources: ScrapeSources): void;
  /** Null when metrics are off: nothing is served and the app mounts no counting middleware. */
  readonly exposition: Exposition | null;
}

const nothing = () => {};
const noAccount: AccountMetrics = {
  held: nothing,
  posted: nothing,
  voided: nothing,
  expired: nothing,
  synced: nothing,
  waited: nothing,
  syncFailed: nothing,
  withdrawn: nothing,
};

/** Metrics off. Stateless, so every instance shares it. */
export const noMetrics: Metrics = {
  requests: { request: nothing },
  upstream: { answered: nothing, ended: nothing, fallback: nothing },
  ledger: { account: () => noAccount, expired: nothing },
  watch: nothing,
  exposition: null,
};
