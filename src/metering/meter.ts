import { answeredAs } from "../db/faults.js";
import { GatewayError, errors, type ErrorCode } from "../errors.js";
import { kindSpec } from "../quota/account-kinds.js";
import type { Hold, ReserveResult } from "../quota/types.js";
import { accountTerms } from "./account-terms.js";
import { Inflight } from "./inflight.js";
import { errorCodeOf, meteringErrors } from "./metered-errors.js";
import { requestRow, unmeteredOutcome, type RowStart } from "./request-row.js";
import { Meter, type MeterStart, type MeteringDeps } from "./request-meter.js";

// THE metering path (docs/architecture.md, "Rules"): admit → reserve → call with fallback → deliver → settle once → log.
// Every billed route drives a Meter (through its handler, metered-handler.ts); none touches the ledger or the request
// log itself. Here a request is admitted and its hold taken; its Meter (request-meter.ts) does the rest, and every
// metered request ends in exactly one post or void of its hold.

export interface Metering {
  /** Admission and the hold: 400 over the context limit, 403 without a plan, 429 without quota. */
  begin(start: MeterStart): Promise<Meter>;
  /** Logs a request refused before metering began (unknown model, bad body) for the user's request list. */
  logRejected(start: RowStart, err: unknown): void;
  /** Logs a request answered without metering (an embed cache hit, a 304): nothing charged, `usage_source` none. */
  logServed(start: RowStart, status: number): void;
  /** Waits for settlements still running (shutdown calls this before closing the pool). */
  drain(): Promise<void>;
}

/** The estimate (3 characters a token) over this many times the context limit refuses without tokenizing. */
const CERTAINLY_OVER = 3;

export function createMetering(deps: MeteringDeps): Metering {
  const { config, ledger } = deps;
  const inflight = new Inflight();

  function logUnmetered(start: RowStart, status: number, code: ErrorCode | null) {
    deps.requestLog.write(requestRow(start, unmeteredOutcome(status, code, performance.now(), deps.clock.now())));
  }

  const logRejected = (start: RowStart, err: unknown) => {
    // Logged as the client was answered (server/error-envelope.ts).
    const answered = answeredAs(err);
    logUnmetered(start, answered instanceof GatewayError ? answered.status : 500, errorCodeOf(answered));
  };

  async function begin(start: MeterStart): Promise<Meter> {
    const reject = (err: GatewayError): never => {
      logRejected(start, err);
      throw err;
    };
    const plan = Object.hasOwn(config.plans, start.key.plan) ? config.plans[start.key.plan] : undefined;
    if (!plan)
      reject(errors.forbidden(`The plan '${start.key.plan}' of this account no longer exists; contact the operator.`, "plan_missing"));
    const limit = plan!.context_limit;
    if (start.estimate.promptTokens > limit) {
      // Far over the limit the estimate decides alone: tokenizing megabytes would stall the event loop for
      // every request of a client that sends them.
      const tokens = start.estimate.promptTokens > CERTAINLY_OVER * limit ? start.estimate.promptTokens : await start.exactPromptTokens();
      if (tokens > limit)
        reject(meteringErrors.contextLimit(tokens, limit, start.promptParam === undefined ? "messages" : start.promptParam));
    }
    // Literals, not spreads: see src/objects.ts.
    const { promptTokens, completionTokens } = start.estimate;
    const amount = start.pricing.hold ?? start.pricing.charge({ promptTokens, completionTokens, cachedTokens: 0 });
    const kind = start.pricing.account;
    const terms = accountTerms[kind];
    let reserved: ReserveResult;
    try {
      reserved = await ledger.reserve({
        kind,
        userId: start.key.userId,
        base: terms.base(plan!, start.pricing.scope),
        scope: start.pricing.scope,
        planRevision: start.key.planRevision,
        amount,
        requestId: start.requestId,
        // A free model's request (a hold of 0) never uses a reset: docs/billing.md, "Automatic resets".
        weeklyResets: kindSpec(kind).resettable && amount > 0n ? BigInt(plan!.weekly_resets) : null,
      });
    } catch (err) {
      // The ledger could not answer (its database): the request still gets its row.
      logRejected(start, err);
      throw err;
    }
    if (!reserved.ok) reject(terms.refused(reserved, amount, deps.clock.now(), start.pricing.scope));
    return new Meter(deps, inflight, start, (reserved as { hold: Hold }).hold);
  }

  return {
    begin,
    logRejected,
    logServed: (start, status) => logUnmetered(start, status, null),
    drain: () => inflight.drain(),
  };
}
