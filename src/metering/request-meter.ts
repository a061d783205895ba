import { DatabaseUnavailableError } from "../db/faults.js";
import type { Logger } from "pino";
import { encodeRow } from "../analytics/row-json.js";
import type { RequestLogWriter, UsageSource } from "../analytics/types.js";
import { formatUsd } from "../billing/usd.js";
import type { CatalogModel } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import { GatewayError, type ErrorCode } from "../errors.js";
import type { UpstreamMetrics } from "../metrics/recorders.js";
import type { Target, UsageReport } from "../providers/types.js";
import { UpstreamError } from "../providers/types.js";
import type { Clock } from "../time/clock.js";
import type { Hold, QuotaLedger, Withdrawable } from "../quota/types.js";
import { logBrokenStream, logFailedAttempt } from "./attempt-log.js";
import type { Inflight } from "./inflight.js";
import { errorCodeOf, upstreamToClient } from "./metered-errors.js";
import type { Pricing } from "./pricing.js";
import { requestRow, withdrawnOutcome, type RowOutcome, type RowStart } from "./request-row.js";

// One metered request's Meter, once its hold is taken (./meter.ts admits and holds): the upstream call with fallback,
// then exactly one post or void of the hold, its request-log row committed with that resolution in the ledger's
// journal (docs/architecture.md, "The metering path").

/** What the metering path is given: createMetering (./meter.ts) passes it on to each Meter. */
export interface MeteringDeps {
  config: Config;
  ledger: QuotaLedger;
  /** Rows of requests refused before anything was held (the metered ones go through the ledger's journal). */
  requestLog: RequestLogWriter;
  logger: Logger;
  clock: Clock;
  /** Upstream latency, time to first byte and fallbacks, by provider. */
  metrics: UpstreamMetrics;
}

export interface MeterStart extends RowStart {
  model: CatalogModel;
  /** Cheap, conservative token estimates for admission and the hold. */
  estimate: { promptTokens: number; completionTokens: number };
  /** The tokenizer's prompt count: consulted only when the estimate is over the plan's context limit. */
  exactPromptTokens: () => Promise<number>;
  /** The request carries the client's own upstream key: its pricing applies quota.byok_charge_ratio, key errors are its own. */
  byok?: boolean;
  /** The field a context-limit refusal names (chat's `messages` unless the route says otherwise). */
  promptParam?: string | null;
  /** Prices the hold and the settlement. */
  pricing: Pricing;
  /** The route's wording of an upstream failure it reports (the evaluation service says 422 where others say 400). */
  clientError?: (err: GatewayError) => GatewayError;
}

/** What a request was charged, as its answer tells the client (`x-gateway-charge`, docs/api.md "Charges"). */
export interface Charge {
  /** Quota units of the day's allowance (the request log's quota_charged: 0 for a request pack's or a USD-paid request). */
  units: bigint;
  /** For reseller keys, what their USD balance paid (exact decimal text, "0" when the allowance paid); null for others. */
  usd: string | null;
}

export class Meter implements Withdrawable {
  private fallbackPath: string[] = [];
  /** How the request ended, kept while its charge waits for its commit: a withdrawn charge logs it as a 503. */
  private settledAs: RowOutcome | undefined;
  private target: Target | undefined;
  private upstreamStartedAt: number | undefined;
  /** When the request to the target that answered was sent. */
  private answerSentAt = 0;
  private upstreamDoneAt: number | undefined;
  private firstByteAt: number | undefined;
  private done = false;

  constructor(
    private readonly deps: MeteringDeps,
    private readonly inflight: Inflight,
    readonly start: MeterStart,
    private readonly hold: Hold,
  ) {}

  /** An upstream failure as the client is told it. */
  toClient(err: UpstreamError): GatewayError {
    const client = upstreamToClient(err, this.start.byok);
    return this.start.clientError?.(client) ?? client;
  }

  /**
   * Tries the model's targets in order: the next one after a connection error, a timeout before the first
   * byte, or 429/500/502/503/504/529; never after another status. On final failure the hold is released.
   */
  async call<T>(attempt: (target: Target) => Promise<T>): Promise<T> {
    // Built only on failure: an Error with its stack per successful request is measurable on the hot path.
    let last: UpstreamError | undefined;
    const { metrics } = this.deps;
    this.upstreamStartedAt = performance.now();
    const targets = this.start.model.targets;
    // Indexed: the attempt number and the next target are read only on failure.
    for (let i = 0; i < targets.length; i++) {
      const target = targets[i]!;
      // The previous target failed and this one is tried: a fallback.
      if (last) metrics.fallback(this.fallbackPath.at(-1)!, last.failure, last.status);
      const sentAt = performance.now();
      try {
        const result = await attempt(target);
        this.target = target;
        this.answerSentAt = sentAt;
        this.upstreamDoneAt = performance.now();
        metrics.answered(target.providerId, (this.upstreamDoneAt - sentAt) / 1000);
        return result;
      } catch (err) {
        if (!(err instanceof UpstreamError)) {
          await this.fail(err);
          throw err;
        }
        last = err;
        this.fallbackPath.push(target.providerId);
        const next = err.retryable ? (targets[i + 1] ?? null) : null;
        logFailedAttempt(this.deps.logger, err, target, {
          requestId: this.start.requestId,
          modelId: this.start.modelId,
          attempt: i + 1,
          next,
          byok: this.start.byok === true,
        });
        if (!next) break;
      }
    }
    last ??= new UpstreamError("connect", null);
    await this.fail(last);
    throw last.failure === "aborted" ? last : this.toClient(last);
  }

  /** Logs an upstream stream that failed after it had begun (for the operator; the relay tells the client). */
  streamBroken(err: unknown): void {
    if (!(err instanceof UpstreamError) || !this.target) return;
    logBrokenStream(this.deps.logger, err, this.target, {
      requestId: this.start.requestId,
      modelId: this.start.modelId,
      attempt: this.fallbackPath.length + 1,
      next: null,
      byok: this.start.byok === true,
    });
  }

  get upstream(): Target | undefined {
    return this.target;
  }

  /** Milliseconds spent in the gateway itself so far (before the upstream call and after its answer). */
  overheadMs(): number {
    const now = performance.now();
    const before = (this.upstreamStartedAt ?? now) - this.start.startedAt;
    return before + (now - (this.upstreamDoneAt ?? now));
  }

  markFirstByte(): void {
    this.firstByteAt ??= performance.now();
  }

  get delivered(): boolean {
    return this.firstByteAt !== undefined;
  }

  /**
   * Posts the real charge exactly once; later calls (and fail/cancel) do nothing. The usage may still be
   * being counted: the first call wins at once, and shutdown waits for the count and the posting. Should the
   * count fail or the pricing throw, the hold itself is posted (the safe charge: what the client was told it
   * might cost) and the row says `usage_source = hold`; a delivered request is never free and never lost.
   *
   * Resolves with the charge once it is committed with the request's row: only then may the answer's last byte go
   * out (docs/billing.md, "Settlement"). Null when it is not charged: withdrawn because the database could not
   * commit it by `database.request_timeout_ms` (the answer is then refused with 503 and nothing is charged), or
   * failed for good (logged as SETTLEMENT_FAILED), or settled before.
   */
  settle(
    usage: UsageReport | Promise<UsageReport>,
    source: UsageSource,
    status = 200,
    code: ErrorCode | null = null,
  ): Promise<Charge | null> {
    if (this.done) return Promise.resolve(null);
    this.done = true;
    const endedAt = performance.now();
    const counted = Promise.resolve(usage).then(
      (u) => this.post(u, source, status, code, endedAt),
      (err: unknown) => {
        this.deps.logger.error({ err, req_id: this.start.requestId }, "USAGE_COUNT_FAILED: the hold is charged instead");
        return this.postHold(status, code, endedAt);
      },
    );
    return this.inflight.track(counted);
  }

  /** settle() for an answer sent whole after it: not charged, it is not sent (503 database_unavailable instead). */
  async settleBeforeAnswer(usage: UsageReport | Promise<UsageReport>, source: UsageSource): Promise<Charge> {
    const charge = await this.settle(usage, source);
    if (!charge) throw new DatabaseUnavailableError();
    return charge;
  }

  private post(usage: UsageReport, source: UsageSource, status: number, code: ErrorCode | null, endedAt: number): Promise<Charge | null> {
    let charged: bigint;
    try {
      charged = this.start.pricing.charge(usage);
    } catch (err) {
      this.deps.logger.error({ err, req_id: this.start.requestId }, "PRICING_FAILED: the hold is charged instead");
      return this.postHold(status, code, endedAt);
    }
    const image = usage.image;
    if (image?.kind === "fallback" && image.reason !== null) {
      this.deps.logger.warn(
        { req_id: this.start.requestId, model: this.start.modelId, upstream_model: this.target?.upstreamModel, reason: image.reason },
        "IMAGE_USAGE_FALLBACK",
      );
    }
    return this.charge(charged, this.outcome(status, code, usage, charged, source, endedAt));
  }

  private postHold(status: number, code: ErrorCode | null, endedAt: number): Promise<Charge | null> {
    const charged = this.hold.amount;
    return this.charge(charged, this.outcome(status, code, null, charged, "hold", endedAt));
  }

  /** The client's price in USD (exact decimal text) of a usage paid from a reseller balance; null when quota pays. */
  clientCost(usage: UsageReport): string | null {
    return this.start.pricing.account === "reseller_usd" ? formatUsd(this.start.pricing.charge(usage)) : null;
  }

  /**
   * Releases the hold of a request that delivered nothing (upstream error, client gone, a failed delivery); once.
   * The answer does not wait for the void's commit (nothing was delivered, nothing is charged); shutdown does.
   */
  fail(err: unknown, status?: number, code: ErrorCode = errorCodeOf(err, this.start.byok)): Promise<void> {
    if (this.done) return Promise.resolve();
    this.done = true;
    const clientStatus =
      status ??
      (code === "client_closed_request"
        ? 499
        : err instanceof UpstreamError
          ? this.toClient(err).status
          : err instanceof GatewayError
            ? err.status
            : 500);
    void this.inflight.track(this.release(this.outcome(clientStatus, code, null, 0n, "none", performance.now())));
    return Promise.resolve();
  }

  /** The record of a charge withdrawn before it could commit (quota/types.ts, Withdrawable): a 503, nothing charged. */
  withdrawnRecord(): string | null {
    return encodeRow(requestRow(this.start, withdrawnOutcome(this.settledAs!)));
  }

  private outcome(
    status: number,
    code: ErrorCode | null,
    usage: UsageReport | null,
    charged: bigint,
    source: UsageSource,
    endedAt: number,
  ): RowOutcome {
    return {
      status,
      code,
      usage,
      charged,
      source,
      target: this.target ?? null,
      fallbackPath: this.fallbackPath,
      pricing: this.start.pricing,
      firstByteAt: this.firstByteAt,
      endedAt,
      now: this.deps.clock.now(),
    };
  }

  /**
   * Posts `charged` with the request's row, which commits in the same statement, and answers the charge once it is
   * committed. The ledger retries transient faults itself; what still fails is reported loudly, never silently free.
   */
  private charge(charged: bigint, outcome: RowOutcome): Promise<Charge | null> {
    this.settledAs = outcome;
    const { ledger, logger, config } = this.deps;
    this.ended(outcome);
    const record = encodeRow(requestRow(this.start, outcome));
    const options = { deadlineMs: config.database.request_timeout_ms, withdrawable: this };
    return ledger.settle(this.hold.id, charged, record, options).then(
      (settled) => (settled === "committed" ? this.chargeOf(charged) : null),
      (err: unknown) => {
        logger.error({ err, hold_id: this.hold.id, charged: String(charged), req_id: this.start.requestId }, "SETTLEMENT_FAILED");
        return null;
      },
    );
  }

  /** What the client is told it was charged (request-row.ts writes the same units). */
  private chargeOf(charged: bigint): Charge {
    const account = this.start.pricing.account;
    const usdPaid = account === "reseller_usd";
    return {
      units: usdPaid || account === "request_pack" ? 0n : charged,
      usd: this.start.key.kind === "reseller" ? (usdPaid ? formatUsd(charged) : "0") : null,
    };
  }

  /** Voids the hold with the request's row (the committed void is waited for by shutdown only). */
  private release(outcome: RowOutcome): Promise<void> {
    this.ended(outcome);
    const record = encodeRow(requestRow(this.start, outcome));
    const holdId = this.hold.id;
    return this.deps.ledger.release(holdId, record).catch((err: unknown) => {
      this.deps.logger.error({ err, hold_id: holdId, charged: null, req_id: this.start.requestId }, "RELEASE_FAILED");
    });
  }

  private ended(outcome: RowOutcome): void {
    if (this.target) this.deps.metrics.ended(this.target.providerId, (outcome.endedAt - this.answerSentAt) / 1000);
  }
}
