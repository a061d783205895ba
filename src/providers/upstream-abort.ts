import { EventEmitter } from "node:events";

/**
 * Cancels one upstream request (the client left). Not an AbortController: on Node 20 every AbortSignal gets a
 * hidden class of its own, whose descriptors were promoted to the old generation, about 0.6 KB per request
 * (docs/performance.md, "object spread", AbortSignal). undici takes an EventEmitter with `aborted` and an
 * "abort" event as well; this is one, with one shape for every request.
 */
export class UpstreamAbort extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit("abort");
  }
}

/** What a provider call is cancelled by: the gateway's UpstreamAbort, or any AbortSignal (tests, in-process callers). */
export type UpstreamSignal = UpstreamAbort | AbortSignal;
