import type { Readable } from "node:stream";
import { createParser } from "eventsource-parser";
import { classifyError } from "./http.js";
import type { EventStream, StreamEvent, StreamSink } from "./types.js";
import { UpstreamError } from "./types.js";
import type { UpstreamSignal } from "./upstream-abort.js";

/**
 * How one protocol's stream shows that it ran its course. `data: [DONE]` (OpenAI chat) always ends a stream;
 * the other protocols end with an event of their own (Anthropic `message_stop`, Responses `response.completed`)
 * or, like Gemini, simply close the body after a chunk that carries a finish reason.
 */
export interface SseRules {
  /** The stream's last event: nothing after it is read. */
  isLast?: (data: Record<string, unknown>) => boolean;
  /** An event after which the body may end (for protocols without a last event). */
  isComplete?: (data: Record<string, unknown>) => boolean;
  /**
   * An in-stream error event as the UpstreamError it stands for. It is raised instead of relayed: its text is
   * the upstream's, which never reaches a client, and one arriving first still lets the gateway fall back.
   */
  toError?: (data: Record<string, unknown>) => UpstreamError | null;
}

const STREAMING = { stream: true };

/**
 * Parses an upstream SSE body into JSON events as bytes arrive (docs/performance.md, "Streams"). The events one
 * network read completes form one batch, handed on from the body's own `data` event: no promise and no async
 * iteration per read. A body that ends before the rules say the stream is complete is a dropped stream
 * (protocol error). `event:` names are kept beside the data; the protocols that send them repeat the name in
 * the data's `type`. With the request's signal, network failures surface as UpstreamError, as before the
 * first byte.
 */
export function readSse(body: Readable, rules: SseRules = {}, signal?: UpstreamSignal): EventStream {
  return new SseStream(body, rules, signal);
}

const DONE: StreamEvent = { done: true };

class SseStream implements EventStream {
  private readonly decoder = new TextDecoder();
  private readonly parser = createParser({ onEvent: (event) => this.parsed(event.data, event.event) });
  private pending: StreamEvent[] = [];
  private malformed = false;
  private complete = false;
  private finished = false;
  private sink: StreamSink | null = null;
  // Before pipe(): what was read but not taken yet, and the caller of next() waiting for it.
  private held: StreamEvent[][] = [];
  private end: { error: UpstreamError | null } | null = null;
  private waiter: { resolve: (batch: StreamEvent[] | null) => void; reject: (err: UpstreamError) => void } | null = null;

  constructor(
    private readonly body: Readable,
    private readonly rules: SseRules,
    signal: UpstreamSignal | undefined,
  ) {
    body.on("data", (chunk: Buffer) => this.read(chunk));
    body.on("end", () => {
      // After the last event the body is read to its end only to keep the connection.
      if (!this.finished) this.finish(this.complete ? null : new UpstreamError("protocol", null));
    });
    // Stays attached after the end: a body cut later must not raise an unhandled 'error'.
    body.on("error", (err) =>
      this.finish(signal ? classifyError(err, signal) : err instanceof UpstreamError ? err : new UpstreamError("connect", null)),
    );
    // Nothing flows until someone asks (next) or listens (pipe).
    body.pause();
  }

  next(): Promise<StreamEvent[] | null> {
    const batch = this.held.shift();
    if (batch) return Promise.resolve(batch);
    if (this.end) return this.end.error ? Promise.reject(this.end.error) : Promise.resolve(null);
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.body.resume();
    });
  }

  pipe(sink: StreamSink): void {
    this.sink = sink;
    for (let batch = this.held.shift(); batch; batch = this.held.shift()) sink.batch(batch);
    if (this.end) sink.end(this.end.error);
    else this.body.resume();
  }

  pause(): void {
    if (!this.finished) this.body.pause();
  }

  resume(): void {
    if (!this.finished) this.body.resume();
  }

  private parsed(data: string, event: string | undefined) {
    if (data === "[DONE]") {
      this.pending.push(DONE);
      return;
    }
    try {
      const parsed: unknown = JSON.parse(data);
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) this.malformed = true;
      else if (event === undefined) this.pending.push({ data: parsed as Record<string, unknown>, raw: data });
      else this.pending.push({ data: parsed as Record<string, unknown>, raw: data, event });
    } catch {
      this.malformed = true;
    }
  }

  /** One network read: its events as one batch, or the end the rules see in them. */
  private read(chunk: Buffer) {
    if (this.finished) return;
    this.parser.feed(this.decoder.decode(chunk, STREAMING));
    if (this.malformed) return this.finish(new UpstreamError("protocol", null));
    if (this.pending.length === 0) return;
    const events = this.pending;
    this.pending = [];
    const { isLast, isComplete, toError } = this.rules;
    const end = events.findIndex((event) => "done" in event || (isLast !== undefined && isLast(event.data)));
    const kept = end >= 0 ? events.slice(0, end + 1) : events;
    if (toError) {
      for (let i = 0; i < kept.length; i++) {
        const event = kept[i]!;
        const error = "data" in event ? toError(event.data) : null;
        if (!error) continue;
        if (i > 0) this.deliver(kept.slice(0, i));
        return this.finish(error);
      }
    }
    this.deliver(kept);
    if (end >= 0) return this.finish(null);
    if (isComplete && !this.complete) this.complete = events.some((event) => "data" in event && isComplete(event.data));
  }

  private deliver(batch: StreamEvent[]) {
    if (this.sink) return this.sink.batch(batch);
    const waiter = this.waiter;
    this.waiter = null;
    if (waiter) waiter.resolve(batch);
    else this.held.push(batch);
    // Pulled one batch at a time: read no further than asked.
    if (!this.finished) this.body.pause();
  }

  private finish(error: UpstreamError | null) {
    if (this.finished) return;
    this.finished = true;
    release(this.body);
    if (this.sink) return this.sink.end(error);
    const waiter = this.waiter;
    this.waiter = null;
    if (!waiter) this.end = { error };
    else if (error) waiter.reject(error);
    else waiter.resolve(null);
  }
}

/**
 * After the last event the body has usually arrived whole: reading on lets it end on its own, which keeps the
 * keep-alive connection without building an error. A body still open a tick later is cut.
 */
function release(body: Readable) {
  if (body.readableEnded || body.destroyed) return;
  body.resume();
  setImmediate(() => {
    if (!body.readableEnded) body.destroy();
  });
}
