import type { Logger } from "pino";
import type { ErrorClass, RequestLogRow, RequestLogWriter, UsageSource } from "../analytics/types.js";
import { formatUsd } from "../billing/usd.js";
import type { CatalogModel } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import { GatewayError, errors } from "../errors.js";
import type { Target, UsageReport } from "../providers/types.js";
import { UpstreamError } from "../providers/types.js";
import type { Clock } from "../quota/clock.js";
import type { Hold, QuotaLedger } from "../quota/types.js";
import type { ApiKeyPrincipal } from "../server/context.js";
import { errorClassOf, meteringErrors, upstreamToClient } from "./errors.js";
import type { Pricing } from "./pricing.js";

// THE metering path (DESIGN.md §3): admit → reserve → call with fallback → deliver → settle once → log.
// Every billed route drives a Meter; none touches the ledger or the request log itself.

export interface MeteringDeps {
  config: Config;
  ledger: QuotaLedger;
  requestLog: RequestLogWriter;
  logger: Logger;
  clock: Clock;
}

export interface MeterStart {
  requestId: string;
  route: string;
  clientProtocol: string;
  key: ApiKeyPrincipal;
  model: CatalogModel;
  /** The model ID the client sent: the model's own, or a reseller alias of it. */
  modelId: string;
  /** performance.now() when the request arrived. */
  startedAt: number;
  streamed: boolean;
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

export interface Metering {
  /** Admission and the hold: 400 over the context limit, 403 without a plan, 429 without quota. */
  begin(start: MeterStart): Promise<Meter>;
  /** Logs a request refused before metering began (unknown model, bad body) for the user's request list. */
  logRejected(start: Omit<MeterStart, "estimate" | "exactPromptTokens" | "promptParam" | "model" | "pricing">, err: unknown): void;
  /** Waits for settlements still running (shutdown calls this before closing the pool). */
  drain(): Promise<void>;
}

/** Settlements run after delivery; shutdown waits for them so none is lost. */
class Inflight {
  private readonly running = new Set<Promise<unknown>>();
  track<T>(work: Promise<T>): Promise<T> {
    this.running.add(work);
    void work.finally(() => this.running.delete(work)).catch(() => {});
    return work;
  }
  async drain() {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}

/** The estimate (3 characters a token) over this many times the context limit refuses without tokenizing. */
const CERTAINLY_OVER = 3;

export class Meter {
  private fallbackPath: string[] = [];
  private target: Target | undefined;
  private upstreamStartedAt: number | undefined;
  private upstreamDoneAt: number | undefined;
  private firstByteAt: number | undefined;
  private resolved = false;

  constructor(
    private readonly deps: MeteringDeps,
    private readonly inflight: Inflight,
    readonly start: MeterStart,
    private readonly hold: Hold,
  ) {}

  /** An upstream failure as the client is told it. */
  private toClient(err: UpstreamError): GatewayError {
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
    this.upstreamStartedAt = performance.now();
    for (const target of this.start.model.targets) {
      try {
        const result = await attempt(target);
        this.target = target;
        this.upstreamDoneAt = performance.now();
        return result;
      } catch (err) {
        if (!(err instanceof UpstreamError)) {
          await this.fail(err);
          throw err;
        }
        last = err;
        this.fallbackPath.push(target.providerId);
        if (err.failure === "protocol") {
          // Why an answer was unusable names a rule, never upstream content.
          this.deps.logger.warn({ req_id: this.start.requestId, provider: target.providerId, reason: err.message }, "UPSTREAM_INVALID_ANSWER");
        } else if (err.failure === "too_large") {
          // The operator's cue to raise limits.upstream_answer_bytes if such answers are legitimate.
          this.deps.logger.warn({ req_id: this.start.requestId, provider: target.providerId, reason: err.message }, "UPSTREAM_ANSWER_TOO_LARGE");
        }
        if (!err.retryable) break;
      }
    }
    last ??= new UpstreamError("connect", null);
    await this.fail(last);
    throw last.failure === "aborted" ? last : this.toClient(last);
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
   * being counted: the first call wins at once, and shutdown waits for the count and the posting.
   */
  settle(
    usage: UsageReport | Promise<UsageReport>,
    source: UsageSource,
    status = 200,
    errorClass: ErrorClass | null = null,
  ): Promise<bigint> {
    if (this.resolved) return Promise.resolve(0n);
    this.resolved = true;
    const endedAt = performance.now();
    return this.inflight.track(Promise.resolve(usage).then((counted) => this.post(counted, source, status, errorClass, endedAt)));
  }

  /**
   * Logs the request and hands the charge to the ledger. The row is written first, so that the request's
   * latency is its own (a settlement can wait for others to share its commit) and nothing of the request is
   * kept alive while the ledger commits.
   */
  private post(usage: UsageReport, source: UsageSource, status: number, errorClass: ErrorClass | null, endedAt: number): Promise<bigint> {
    const charged = this.start.pricing.charge(usage);
    this.log({ status, errorClass, usage, charged, source }, endedAt);
    const { logger, ledger } = this.deps;
    const holdId = this.hold.id;
    const requestId = this.start.requestId;
    return ledger.settle(holdId, charged).then(
      () => charged,
      (err: unknown) => {
        // The ledger retried already. The service was delivered: a lost settlement makes it free, so leave a loud trace.
        logger.error({ err, hold_id: holdId, charged: String(charged), req_id: requestId }, "SETTLEMENT_FAILED");
        return charged;
      },
    );
  }

  /** The client's price in USD (exact decimal text) of a usage paid from a reseller balance; null when quota pays. */
  clientCost(usage: UsageReport): string | null {
    return this.start.pricing.account === "reseller_usd" ? formatUsd(this.start.pricing.charge(usage)) : null;
  }

  /** Releases the hold of a request that delivered nothing (upstream error, client gone); once. */
  fail(err: unknown, status?: number, errorClass: ErrorClass = errorClassOf(err, this.start.byok)): Promise<void> {
    if (this.resolved) return Promise.resolve();
    this.resolved = true;
    const clientStatus = status ?? (errorClass === "client_cancelled" ? 499 : err instanceof UpstreamError ? this.toClient(err).status : err instanceof GatewayError ? err.status : 500);
    this.log({ status: clientStatus, errorClass, usage: null, charged: 0n, source: "none" }, performance.now());
    const { logger, ledger } = this.deps;
    const holdId = this.hold.id;
    return this.inflight.track(
      ledger.release(holdId).catch((releaseErr: unknown) => {
        // An unreleased hold is expired by the expire_holds task; nothing is charged for it.
        logger.warn({ err: releaseErr, hold_id: holdId }, "releasing a hold failed");
      }),
    );
  }

  private log(
    outcome: { status: number; errorClass: ErrorClass | null; usage: UsageReport | null; charged: bigint; source: UsageSource },
    endedAt: number,
  ) {
    const { start } = this;
    const { usage } = outcome;
    const answered = this.target?.providerId;
    const paysInUsd = start.pricing.account === "reseller_usd";
    this.deps.requestLog.write({
      requestId: start.requestId,
      userId: start.key.userId,
      keyId: start.key.keyId,
      route: start.route,
      clientProtocol: start.clientProtocol,
      publicModel: start.modelId,
      upstreamModel: this.target?.upstreamModel ?? null,
      provider: answered ?? null,
      fallbackPath: this.fallbackPath,
      status: outcome.status,
      errorClass: outcome.errorClass,
      inputTokens: outcome.usage?.promptTokens ?? 0,
      outputTokens: outcome.usage?.completionTokens ?? 0,
      cachedTokens: outcome.usage?.cachedTokens ?? 0,
      quotaCharged: paysInUsd ? 0n : outcome.charged,
      costUsd: paysInUsd && usage ? formatUsd(outcome.charged) : null,
      upstreamCostUsd: usage && this.target ? start.pricing.upstreamCost(usage, this.target) : null,
      usageSource: outcome.source,
      latencyMs: round(endedAt - start.startedAt),
      ttfbMs: this.firstByteAt === undefined ? null : round(this.firstByteAt - start.startedAt),
      streamed: start.streamed,
      createdAt: new Date(),
    } satisfies RequestLogRow);
  }
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

export function createMetering(deps: MeteringDeps): Metering {
  const { config, ledger } = deps;
  const inflight = new Inflight();

  function rejectedRow(start: Parameters<Metering["logRejected"]>[0], err: unknown): RequestLogRow {
    return {
      requestId: start.requestId,
      userId: start.key.userId,
      keyId: start.key.keyId,
      route: start.route,
      clientProtocol: start.clientProtocol,
      publicModel: start.modelId,
      upstreamModel: null,
      provider: null,
      fallbackPath: [],
      status: err instanceof GatewayError ? err.status : 500,
      errorClass: errorClassOf(err),
      inputTokens: 0,
      outputTokens: 0,
      cachedTokens: 0,
      quotaCharged: 0n,
      costUsd: null,
      upstreamCostUsd: null,
      usageSource: "none",
      latencyMs: round(performance.now() - start.startedAt),
      ttfbMs: null,
      streamed: start.streamed,
      createdAt: new Date(),
    };
  }

  async function begin(start: MeterStart): Promise<Meter> {
    const reject = (err: GatewayError): never => {
      deps.requestLog.write(rejectedRow(start, err));
      throw err;
    };
    const plan = config.plans[start.key.plan];
    if (!plan) reject(errors.forbidden(`The plan '${start.key.plan}' of this account no longer exists; contact the operator.`, "plan_missing"));
    const limit = plan!.context_limit;
    if (start.estimate.promptTokens > limit) {
      // Far over the limit the estimate decides alone: tokenizing megabytes would stall the event loop for
      // every request of a client that sends them.
      const tokens = start.estimate.promptTokens > CERTAINLY_OVER * limit ? start.estimate.promptTokens : await start.exactPromptTokens();
      if (tokens > limit) reject(meteringErrors.contextLimit(tokens, limit, start.promptParam === undefined ? "messages" : start.promptParam));
    }
    // Literals, not spreads: see src/objects.ts.
    const { promptTokens, completionTokens } = start.estimate;
    const amount = start.pricing.charge({ promptTokens, completionTokens, cachedTokens: 0 });
    const reseller = start.pricing.account === "reseller_usd";
    const reserved = await ledger.reserve({
      kind: start.pricing.account,
      userId: start.key.userId,
      base: reseller ? null : BigInt(plan!.daily_tokens),
      amount,
      requestId: start.requestId,
    });
    if (!reserved.ok) reject(meteringErrors.refused(start.pricing.account, reserved, amount, deps.clock.now()));
    return new Meter(deps, inflight, start, (reserved as { hold: Hold }).hold);
  }

  return {
    begin,
    logRejected: (start, err) => deps.requestLog.write(rejectedRow(start, err)),
    drain: () => inflight.drain(),
  };
}
