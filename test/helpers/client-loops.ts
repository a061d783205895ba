import { setTimeout as sleep } from "node:timers/promises";

// Load from several clients, each sending one request after another until the test stops them.

/**
 * Runs `clients` loops (client numbers `first`, `first + 1`, …), each calling `step(client, n)` for n = 0, 1, …
 * with `pauseMs` between steps; stop() lets each loop finish the step under way and waits for them all.
 */
export function clientLoops(
  opts: { clients: number; first?: number; pauseMs: number },
  step: (client: number, n: number) => Promise<void>,
): { stop(): Promise<void> } {
  let stopping = false;
  const first = opts.first ?? 0;
  const running = Array.from({ length: opts.clients }, async (_, i) => {
    for (let n = 0; !stopping; n++) {
      await step(first + i, n);
      if (opts.pauseMs > 0) await sleep(opts.pauseMs);
    }
  });
  return {
    async stop() {
      stopping = true;
      await Promise.all(running);
    },
  };
}
