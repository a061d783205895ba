import v8 from "node:v8";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { relayStream, type RelayProtocol } from "../../src/metering/relays/stream-relay.js";
import type { Meter } from "../../src/metering/meter.js";
import type { EventStream, StreamEvent, StreamSink } from "../../src/providers/types.js";
import { UpstreamAbort } from "../../src/providers/upstream-abort.js";

// A finished stream must leave nothing in the old generation that still points at it: whatever an old object
// points at survives every scavenge until the next mark-compact, and is promoted (docs/performance.md,
// "Finding what is promoted"). A getter in an object literal did that: V8 keeps its accessor pair in the
// old generation.

/** Runs one stream of `events` (delivered as one batch) to its end; the meter holds `payload`. */
function runStream(events: StreamEvent[], payload: unknown, protocol: (meter: { delivered: boolean }) => RelayProtocol): string {
  const meter = {
    payload,
    delivered: false,
    markFirstByte() {
      this.delivered = true;
    },
    settle: () => Promise.resolve(0n),
    fail: () => Promise.resolve(),
    streamBroken() {},
  };
  const batches: EventStream = {
    next: () => Promise.resolve(null),
    pipe(sink: StreamSink) {
      sink.batch(events);
      sink.end(null);
    },
    pause() {},
    resume() {},
  };
  let text = "";
  relayStream(
    { meter: meter as unknown as Meter, requestId: "req_test", first: null, batches, upstream: new UpstreamAbort() },
    protocol(meter),
  ).start({
    write(t) {
      text += t;
      return true;
    },
    onDrain() {},
    end() {
      text += "<end>";
    },
  });
  return text;
}

const echo = (): RelayProtocol => ({
  transform: (event, ctx) => ("done" in event ? (ctx.delivered ? "[DONE]" : "") : String(event.data.n)),
  usage: () => ({ promptTokens: 1, completionTokens: 1, cachedTokens: 0 }),
  countLocal: () => Promise.resolve({ promptTokens: 1, completionTokens: 1, cachedTokens: 0 }),
  errorFrame: () => "error",
});

describe("relayStream", () => {
  it("relays every event and ends", () => {
    expect(runStream([{ data: { n: 1 }, raw: '{"n":1}' }, { data: { n: 2 }, raw: '{"n":2}' }, { done: true }], null, echo)).toBe(
      "12[DONE]<end>",
    );
  });

  it("leaves nothing of a finished stream for scavenges to promote", () => {
    v8.setFlagsFromString("--expose-gc");
    // A context made after the flag is set has gc().
    const gc = vm.runInNewContext("gc") as (options: { type: "minor" }) => void;
    const streams = 200;
    const payloadBytes = 16 * 1024;
    const events: StreamEvent[] = [{ data: { n: 1 }, raw: '{"n":1}' }, { done: true }];
    const run = (n: number) => {
      for (let i = 0; i < n; i++) runStream(events, new Array(payloadBytes / 8).fill(i), echo);
      // Two scavenges: what survives both is promoted.
      gc({ type: "minor" });
      gc({ type: "minor" });
    };
    // The first streams promote what lives on (compiled code and its feedback, hidden classes).
    run(streams);
    const profiler = new v8.GCProfiler();
    profiler.start();
    run(streams);
    // What the scavenges added to the old generation (a mark-compact, which V8 may run meanwhile, frees it again).
    const oldSpace = (stats: v8.HeapSpaceStatistics[]) => stats.find((space) => space.spaceName === "old_space")?.spaceUsedSize ?? 0;
    const promoted = profiler
      .stop()
      .statistics.filter((gcRun) => gcRun.gcType === "Scavenge")
      .reduce((sum, gcRun) => sum + oldSpace(gcRun.afterGC.heapSpaceStatistics) - oldSpace(gcRun.beforeGC.heapSpaceStatistics), 0);
    // With an accessor pair per stream in the old generation, about every payload was promoted (3.2 MB).
    expect(promoted).toBeLessThan((streams * payloadBytes) / 10);
  });
});
