import type { Charge, Meter } from "../request-meter.js";
import type { EventStream, StreamEvent, UsageReport } from "../../providers/types.js";
import { UpstreamError } from "../../providers/types.js";
import type { BodySink, PushedBody } from "../../server/respond.js";
import type { UpstreamAbort } from "../../providers/upstream-abort.js";
import { OutputMeter } from "./output-cap.js";
import { withCharge, type ChargeCarrier } from "./charge-frames.js";

// The relay of every streamed route and its one rule: whatever happens (the stream's end, an upstream drop,
// the client gone) the meter is settled exactly once, from the upstream's usage or the local count of what was
// delivered. What an event becomes for the client is the protocol's (`RelayProtocol`).
//
// The end of a stream waits for its charge (docs/billing.md, "Settlement"): from the first event that can be its
// end (the protocol's `closing`: a usage chunk, `[DONE]`, a terminal event) the client's text is held, and once the
// upstream ended it is written after the charge committed, carrying the charge (charge-frames.ts). An event that is
// not an end after all (another image after a completed one) releases what was held. A charge the database could
// not commit in time is withdrawn: the client gets the protocol's in-band error instead of the end, and nothing is
// charged.
//
// The relay is pushed to: each network read's events arrive from the body's own data event, are transformed
// and written to the client in one go, with no promise in between (docs/performance.md, "Streams").

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
  /** How a stream of generated text is held to its output cap (./output-cap.ts); none for images. */
  output?: CappedOutput;
  /**
   * The in-band error the client gets when a stream that had begun cannot go on: the upstream dropped it
   * (`upstream_stream_interrupted`), an event failed the gateway's checks (`upstream_invalid_output`: an
   * image that cannot be delivered, src/providers/upstream-images/chat-images.ts), or its charge could not be committed
   * (`database_unavailable`).
   */
  errorFrame(requestId: string, code: StreamFailure): string;
  /** Whether an upstream event can be the stream's end: from it on, the client's text waits for the charge. */
  closing?(event: StreamEvent): boolean;
  /**
   * The client's closing text for an upstream stream that ended as it should, written after what was held. For a
   * client protocol with an end of its own that the upstream's does not have (chat's usage chunk and `[DONE]`
   * after a Gemini stream, whose body simply ends).
   */
  end?(ctx: RelayContext): string | Promise<string>;
}

export interface CappedOutput {
  /** The generated text delivered so far, as the protocol collects it (what countLocal counts). */
  readonly delivered: readonly string[];
  /**
   * The protocol's normal end for a stream the gateway ends at its output cap: the length finish reason, the
   * usage billed (the local count), and the closing events.
   */
  lengthEnd(ctx: RelayContext): string | Promise<string>;
}

/** Why a stream that had begun ended early (the request log's code, and the error event's). */
export type StreamFailure = "upstream_stream_interrupted" | "upstream_invalid_output" | "database_unavailable";

/** What the in-band error of each protocol says of each failure. */
export const STREAM_FAILURE_MESSAGES: Record<StreamFailure, string> = {
  upstream_stream_interrupted: "The upstream stream ended unexpectedly.",
  upstream_invalid_output: "The upstream provider's output failed the gateway's checks; nothing more was generated for this request.",
  database_unavailable:
    "The gateway's database could not record this answer's charge in time, so the answer ends here and nothing was charged; retry shortly with backoff.",
};

export interface RelayOptions {
  meter: Meter;
  requestId: string;
  /** The first batch, already read on the target that answered (null: the stream ended before any event). */
  first: StreamEvent[] | null;
  /** The rest of the stream. */
  batches: EventStream;
  /** Aborts the upstream request; aborted from outside, it means the client left. */
  upstream: UpstreamAbort;
  /** The output tokens after which the stream is ended (./output-cap.ts); null or absent: no cap. */
  outputCap?: number | null;
  /** Where the client's protocol carries the charge in its final usage event (null: an SSE comment). */
  carrier: ChargeCarrier | null;
}

/**
 * The relay's context. A class, not an object literal with `get delivered()`: V8 allocates the accessor pair of
 * a literal's getter in the old generation, so every stream left an old object pointing at its getter, whose
 * closure held the meter, the protocol and through them the whole request; scavenges kept all of it and
 * promoted it, 9-11 KB per stream (docs/performance.md, "Object spread"). A class's getter is defined once.
 */
class StreamContext implements RelayContext {
  private local: Promise<UsageReport> | undefined;

  constructor(
    private readonly meter: Meter,
    private readonly protocol: RelayProtocol,
  ) {}

  localUsage(): Promise<UsageReport> {
    return (this.local ??= this.protocol.countLocal());
  }

  get delivered(): boolean {
    return this.meter.delivered;
  }
}

/** The client's body: `first`, then every later batch as it arrives, each batch's text written at once. */
export function relayStream(opts: RelayOptions, protocol: RelayProtocol): PushedBody {
  return new StreamRelay(opts, protocol);
}

/**
 * One stream's relay. A class rather than a closure over its state: its methods are defined once, not a dozen
 * closures per stream, and a batch that nothing waits before runs with no closure at all.
 */
class StreamRelay implements PushedBody {
  private readonly meter: Meter;
  private readonly batches: EventStream;
  private readonly upstream: UpstreamAbort;
  private readonly ctx: StreamContext;
  private readonly capping: CappedOutput | undefined;
  private readonly output: OutputMeter | null;
  private out: BodySink | undefined = undefined;
  // Set once the stream has run its course, failed, or lost its client: the meter is settled, nothing more is written.
  private over = false;
  // The client is not keeping up: reading waits for its drain.
  private draining = false;
  // From a closing event on, the client's text waits here for the charge (or for an event that is not an end).
  private holding = false;
  private held = "";
  // The last batch handed over, and once the upstream's stream ended as it should, its last batch.
  private latest: StreamEvent[] | null;
  private lastBatch: StreamEvent[] | null = null;
  // While a transform is being awaited, later batches and the end queue behind it to keep their order.
  private queue: Promise<void> | undefined = undefined;
  /** broken(), for the promises of a transform or a count to reject to: made once per stream. */
  private readonly onBroken = (err: unknown) => this.broken(err);

  constructor(
    private readonly opts: RelayOptions,
    private readonly protocol: RelayProtocol,
  ) {
    this.meter = opts.meter;
    this.batches = opts.batches;
    this.upstream = opts.upstream;
    this.ctx = new StreamContext(opts.meter, protocol);
    this.capping = protocol.output;
    this.output = this.capping && opts.outputCap != null ? new OutputMeter(this.capping.delivered, opts.outputCap) : null;
    this.latest = opts.first;
  }

  start(sink: BodySink): void {
    this.out = sink;
    // The client can have left while the upstream answered: nothing would tell the relay any more.
    if (this.upstream.aborted) return this.cancel();
    if (this.opts.first) this.batchInOrder(this.opts.first);
    this.batches.pipe({
      batch: (events) => {
        this.latest = events;
        this.batchInOrder(events);
      },
      end: (error) => {
        if (error === null) this.lastBatch = this.latest;
        this.finishInOrder(error);
      },
    });
    // pipe() starts reading: not while the first batch still waits for a transform, a count or the client.
    if (this.queue || this.draining) this.batches.pause();
  }

  /** The client left: bill what it got, stop the upstream. */
  cancel(): void {
    if (this.over) return;
    this.over = true;
    void this.settle(499, "client_closed_request");
    this.upstream.abort();
  }

  // Nothing delivered: the hold is voided (a stream that ended empty counts as interrupted).
  private settle(status: number, code: "client_closed_request" | StreamFailure | null): Promise<Charge | null> {
    const meter = this.meter;
    if (!meter.delivered) {
      void meter.fail(null, code === "client_closed_request" ? 499 : 502, code ?? "upstream_stream_interrupted");
      return Promise.resolve(null);
    }
    const usage = this.protocol.usage();
    if (usage) return meter.settle(usage, "upstream", status, code);
    return meter.settle(this.ctx.localUsage(), "estimated", status, code);
  }

  /**
   * The stream's last text, once its charge is committed: carrying the charge, or the in-band error when the charge
   * was withdrawn (a stream that delivered nothing ends as it is).
   */
  private close(charged: Promise<Charge | null>, last: Promise<string> | string): void {
    const out = this.out!;
    void Promise.all([charged, last]).then(
      ([charge, text]) => {
        if (charge) out.write(withCharge(text, charge, this.opts.carrier));
        else if (this.meter.delivered) out.write(this.protocol.errorFrame(this.opts.requestId, "database_unavailable"));
        out.end();
      },
      () => out.end(),
    );
  }

  /** What was held back, for a stream that ends otherwise than by its own end. */
  private releaseHeld(): string {
    const text = this.held;
    this.held = "";
    this.holding = false;
    return text;
  }

  /**
   * Dropped or broken upstream, or an event refused, after the answer began: bill what was delivered (nothing:
   * the hold is released), stop the upstream so that nothing more is generated, tell the client in-band.
   */
  private broken(err?: unknown): void {
    if (this.over) return;
    this.over = true;
    this.meter.streamBroken(err);
    const code =
      err instanceof UpstreamError && err.failure === "invalid_output" ? "upstream_invalid_output" : "upstream_stream_interrupted";
    void this.settle(200, code);
    this.upstream.abort();
    this.out!.write(this.releaseHeld() + this.protocol.errorFrame(this.opts.requestId, code));
    this.out!.end();
  }

  /**
   * The output passed its cap: a normal end in the protocol's terms, billed on the local count of what was
   * delivered; the upstream is stopped.
   */
  private capped(): void {
    if (this.over || !this.capping) return;
    this.over = true;
    this.upstream.abort();
    const before = this.releaseHeld();
    const end = this.capping.lengthEnd(this.ctx);
    this.close(this.settle(200, null), typeof end === "string" ? before + end : end.then((text) => before + text));
  }

  private write(text: string): void {
    if (this.over) return;
    if (this.holding) {
      this.held += text;
      return;
    }
    if (this.out!.write(text) || this.draining) return;
    this.draining = true;
    this.batches.pause();
    this.out!.onDrain(() => {
      this.draining = false;
      this.batches.resume();
    });
  }

  private marked(text: string): string {
    if (text) this.meter.markFirstByte();
    return text;
  }

  /**
   * Transforms and writes one batch; a promise only when a transform returned one, or when the output is
   * counted against its cap (./output-cap.ts: at growing intervals). Either way reading waits for it; a count
   * writes what came before it first, so the client's text never waits for the tokenizer.
   */
  private relay(events: StreamEvent[], from = 0, prefix = ""): Promise<void> | void {
    if (this.over) return;
    const protocol = this.protocol;
    let text = prefix;
    try {
      for (let i = from; i < events.length; i++) {
        const event = events[i]!;
        const closing = protocol.closing?.(event) ?? false;
        if (closing !== this.holding) {
          // What came before an end goes out now; an end that was not one after all goes out with this event.
          this.write(text);
          text = closing ? "" : this.releaseHeld();
          this.holding = closing;
        }
        const transformed = protocol.transform(event, this.ctx);
        // Awaited only when it is a promise: a microtask per event is measurable on the hot path.
        if (typeof transformed !== "string") {
          this.batches.pause();
          return transformed
            .then((t) => this.relay(events, i + 1, text + this.marked(t)), this.onBroken)
            .finally(() => {
              if (!this.draining) this.batches.resume();
            });
        }
        text += this.marked(transformed);
        const verdict = this.output === null ? false : this.output.check();
        if (verdict) {
          this.write(text);
          this.batches.pause();
          // Past the cap, the stream ends here, unless this batch holds the upstream's own end: it ends as sent.
          return verdict
            .then((past) => (past && events !== this.lastBatch ? this.capped() : this.relay(events, i + 1)), this.onBroken)
            .finally(() => {
              if (!this.draining && !this.over) this.batches.resume();
            });
        }
      }
    } catch (err) {
      return this.broken(err);
    }
    this.write(text);
  }

  private finish(error: UpstreamError | null): void {
    if (this.over) return;
    if (error === null) {
      this.over = true;
      // The end goes out once the charge is committed; shutdown waits for the settlement (drain()).
      const held = this.releaseHeld();
      const end = this.protocol.end?.(this.ctx);
      this.close(this.settle(200, null), end === undefined ? held : typeof end === "string" ? held + end : end.then((text) => held + text));
    } else if (error.failure === "aborted" || this.upstream.aborted) {
      this.cancel();
    } else {
      this.broken(error);
    }
  }

  /** relay(events) in order: behind whatever is queued, else at once (no closure for the usual batch). */
  private batchInOrder(events: StreamEvent[]): void {
    if (this.queue) this.queueBehind(() => this.relay(events));
    else this.waitFor(this.relay(events));
  }

  /** finish(error) in order, as batchInOrder. */
  private finishInOrder(error: UpstreamError | null): void {
    if (this.queue) this.queueBehind(() => this.finish(error));
    else this.finish(error);
  }

  private queueBehind(run: () => Promise<void> | void): void {
    this.waitFor(this.queue!.then(run, run));
  }

  /** Later batches and the end wait for `pending` (while it is the last thing queued). */
  private waitFor(pending: Promise<void> | void): void {
    if (!pending) return;
    this.queue = pending;
    const clear = () => {
      if (this.queue === pending) this.queue = undefined;
    };
    void pending.then(clear, clear);
  }
}
