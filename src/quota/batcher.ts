// Coalescing of ledger calls: one statement in flight per key; calls that arrive meanwhile (and in the same
// turn of the event loop, hence setImmediate before each batch) form the next batch, so batches grow with the
// load by themselves. Used for settlements/releases and for reservations of one account.

export const MAX_BATCH = 500;

interface Waiting<I, O> {
  item: I;
  resolve: (outcome: O) => void;
  reject: (err: unknown) => void;
}

/** Runs one batch as one statement; per item: its outcome, or the Error its caller gets. */
export type RunBatch<I, O> = (items: I[]) => Promise<(O | Error)[]>;

// A data exception (22: a malformed id, an out-of-range number) or a violated constraint (23) rolls the whole
// statement back; one item caused it, so the batch is re-run item by item and only that caller fails.
const isDataError = (err: unknown) =>
  typeof err === "object" && err !== null && /^2[23]/.test(String((err as { code?: unknown }).code));

/**
 * No retry on a lost connection: like a single statement, the whole batch fails and each caller decides (a
 * re-run could not tell a batch that committed before its reply was lost from one that did not).
 */
export function createBatcher<I, O>(
  run: RunBatch<I, O>,
  options: { maxBatch?: number; keyOf?: (item: I) => string } = {},
): (item: I) => Promise<O> {
  const maxBatch = options.maxBatch ?? MAX_BATCH;
  // Per key: the calls waiting for the statement in flight. An entry exists while its key is draining.
  const queues = new Map<string, Waiting<I, O>[]>();

  async function apply(batch: Waiting<I, O>[]): Promise<void> {
    let outcomes: (O | Error)[];
    try {
      outcomes = await run(batch.map((w) => w.item));
    } catch (err) {
      if (batch.length > 1 && isDataError(err)) {
        for (const w of batch) await apply([w]);
      } else {
        for (const w of batch) w.reject(err);
      }
      return;
    }
    batch.forEach((w, i) => {
      const outcome = outcomes[i]!;
      if (outcome instanceof Error) w.reject(outcome);
      else w.resolve(outcome);
    });
  }

  async function drain(key: string, queue: Waiting<I, O>[]): Promise<void> {
    try {
      while (queue.length > 0) {
        await new Promise((resolve) => setImmediate(resolve));
        await apply(queue.splice(0, maxBatch));
      }
    } finally {
      queues.delete(key);
    }
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      const key = options.keyOf?.(item) ?? "";
      const waiting = { item, resolve, reject };
      const queue = queues.get(key);
      if (queue) {
        queue.push(waiting);
        return;
      }
      const fresh = [waiting];
      queues.set(key, fresh);
      void drain(key, fresh);
    });
}
