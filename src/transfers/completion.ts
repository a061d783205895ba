import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { backoffMs, type Backoff } from "../db/backoff.js";
import { faultCode, isTransientDbError } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";

// A transfer's completion by the process that sent it (docs/billing.md, "Token transfers"): started once the send
// has committed, in the background of the request (its 202 does not wait for it), and retried on transient
// database faults with capped backoff for as long as the process runs. graphile-worker's complete_transfer, queued
// by the send, is the backstop for a process that stops first. The two may run in any order or at once: a
// completion locks the record first and acts only on a pending one.

const RETRY: Backoff = { firstMs: 100, maxMs: 5_000, jitter: true };

export interface BackgroundCompletion {
  /** Completes the transfer in the background; nothing more when this process is completing it already. */
  start(id: string): void;
  /** Stops retrying and waits for the attempts under way (shutdown). */
  close(): Promise<void>;
}

export function backgroundCompletion(deps: {
  complete(id: string): Promise<unknown>;
  logger: Logger;
  health: DatabaseHealth;
}): BackgroundCompletion {
  const running = new Map<string, Promise<void>>();
  const stopping = new AbortController();

  async function completeRetrying(id: string): Promise<void> {
    for (let attempt = 0; !stopping.signal.aborted; attempt++) {
      try {
        await deps.complete(id);
        deps.health.ok();
        return;
      } catch (err) {
        if (!isTransientDbError(err)) {
          deps.logger.error({ transfer_id: id, code: faultCode(err) }, "TRANSFER_COMPLETION_FAILED: left to the complete_transfer task");
          return;
        }
        deps.health.failed(err, "transfer completion");
        await sleep(backoffMs(attempt, RETRY), undefined, { signal: stopping.signal }).catch(() => {});
      }
    }
  }

  return {
    start(id) {
      if (running.has(id) || stopping.signal.aborted) return;
      running.set(
        id,
        completeRetrying(id).finally(() => running.delete(id)),
      );
    },
    async close() {
      stopping.abort();
      await Promise.all(running.values());
    },
  };
}
