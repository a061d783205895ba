import type { Logger } from "pino";
import { describeError, GatewayConnectionError, type GatewayCallError } from "../client/errors.js";

/**
 * A run of failed claims, told once: its first failure at warn (naming the gateway and what to check when it cannot
 * be reached), each further one at debug, and its end at info. A worker started before its gateway would otherwise
 * write a line every backoff, and nothing when the gateway comes back.
 */
export class ClaimOutage {
  private count = 0;
  private since = 0;

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {}

  /** Claims failed in a row so far (0 when the last one was answered). */
  get failures(): number {
    return this.count;
  }

  /** A claim failed with `err`; the next is sent after `delayMs`. */
  failed(err: GatewayCallError, delayMs: number): void {
    this.count++;
    const fields = { err: describeError(err), failures: this.count, delay_ms: delayMs };
    if (this.count > 1) return this.logger.debug(fields, "claim failed; backing off");
    this.since = this.now();
    const unreachable = err instanceof GatewayConnectionError && !err.timedOut;
    this.logger.warn(fields, unreachable ? "gateway unreachable; retrying until it answers" : "claim failed; backing off");
  }

  /** A claim was answered: an outage, if there was one, is over. */
  answered(): void {
    if (this.count === 0) return;
    this.logger.info({ failures: this.count, outage_ms: this.now() - this.since }, "gateway is back; claiming again");
    this.count = 0;
  }
}
