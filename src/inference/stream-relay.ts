import type { Meter } from "../metering/meter.js";
import type { StreamEvent, UsageReport } from "../providers/types.js";

// The relay of every streamed route, batch by batch, and its one rule: whatever happens (the stream's end, an
// upstream drop, the client gone) the meter is settled exactly once, from the upstream's usage or the local
// count of what was delivered. What an event becomes for the client is the protocol's (`RelayProtocol`).

export interface RelayContext {
  /** The local count of what was delivered; counted once, so what a client is shown and billed agree. */
  localUsage(): Promise<UsageReport>;
  /** Whether anything reached the client yet. */
  readonly delivered: boolean;
}

export interface RelayProtocol {
  /** The client's text for one upstream event ("" for nothing); sees every event, in order. */
  transform(event: StreamEvent, ctx: RelayContext): string | Promise<string>;
  /** The usage the upstream has reported so far. */
  usage(): UsageReport | null;
  /** The local count: the prompt by the tokenizer plus what was delivered. */
  countLocal(): Promise<UsageReport>;
  /** The in-band error the client gets when the upstream drops a stream that had begun. */
  errorFrame(requestId: string): string;
}

export interface RelayOptions {
  meter: Meter;
  requestId: string;
  first: IteratorResult<StreamEvent[]>;
  batches: AsyncIterator<StreamEvent[]>;
  /** Aborts the upstream request; aborted from outside, it means the client left. */
  upstream: AbortController;
}

/**
 * The SSE text for the client, one string per upstream batch ("" when a batch has nothing for the client);
 * the first comes from `first`, which the caller already read.
 */
export async function* relayStream(opts: RelayOptions, protocol: RelayProtocol): AsyncGenerator<string, void, undefined> {
  const { meter } = opts;
  let local: Promise<UsageReport> | undefined;
  const ctx: RelayContext = {
    localUsage: () => (local ??= protocol.countLocal()),
    get delivered() {
      return meter.delivered;
    },
  };

  const settle = (status: number, errorClass: "client_cancelled" | "upstream_error" | null) => {
    if (!meter.delivered) return meter.fail(null, errorClass === "client_cancelled" ? 499 : 502, errorClass ?? "upstream_error");
    const usage = protocol.usage();
    if (usage) return meter.settle(usage, "upstream", status, errorClass);
    return meter.settle(ctx.localUsage(), "estimated", status, errorClass);
  };

  // The client can leave before the first write (and the relay would never hear of it): the disconnect
  // watcher's abort settles too. Settling twice is a no-op.
  opts.upstream.signal.addEventListener("abort", () => void settle(499, "client_cancelled"), { once: true });

  // Set once the stream has run its course (or failed and settled); a consumer that stops reading earlier
  // means the client left.
  let over = false;
  try {
    for (let next = opts.first; !next.done; next = await opts.batches.next()) {
      let out = "";
      for (const event of next.value) {
        // Awaited only when it is a promise: a microtask per event is measurable on the hot path.
        const transformed = protocol.transform(event, ctx);
        const text = typeof transformed === "string" ? transformed : await transformed;
        if (!text) continue;
        meter.markFirstByte();
        out += text;
      }
      yield out;
    }
    // The upstream iterator ends after the protocol's last event; a stream that stopped before it was flagged
    // as an error. Settlement is tracked (drain() waits for it), so the body's end does not wait for the database.
    over = true;
    void settle(200, null);
  } catch {
    // Aborted: the client left, and the abort listener settled. Nobody reads this stream any more.
    over = true;
    if (opts.upstream.signal.aborted) return;
    // Dropped or broken upstream after delivery began: bill what was delivered, tell the client in-band.
    void settle(200, "upstream_error");
    opts.upstream.abort();
    yield protocol.errorFrame(opts.requestId);
  } finally {
    if (!over) opts.upstream.abort();
  }
}
