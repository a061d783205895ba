import v8 from "node:v8";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { relayStream, type RelayProtocol } from "../../src/metering/relays/stream-relay.js";
import type { Charge, Meter } from "../../src/metering/request-meter.js";
import type { EventStream, StreamEvent, StreamSink } from "../../src/providers/types.js";
import { UpstreamAbort } from "../../src/providers/upstream-abort.js";

// A finished stream must leave nothing in the old generation that still points at it: whatever an old object
// points at survives every scavenge until the next mark-compact, and is promoted (docs/performance.md,
// "Finding what is promoted"). A getter in an object literal did that: V8 keeps its accessor pair in the
// old generation.

/**
 * Runs one stream of `events` (delivered as one batch) to its end; the meter holds `payload` and settles with
 * `settled` (a charge, or null: withdrawn). `seen` gets the text written so far each time the meter is asked to settle.
 */
function runStream(
  events: StreamEvent[],
  payload: unknown,
  protocol: (meter: { delivered: boolean }) => RelayProtocol,
  settled: Promise<Charge | null> = Promise.resolve({ units: 0n, usd: null }),
  seen?: (text: string) => void,
): Promise<string> {
  const meter = {
    payload,
    delivered: false,
    markFirstByte() {
      this.delivered = true;
    },
    settle: () => {
      seen?.(text);
      return settled;
    },
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
  let ended: () => void;
  const done = new Promise<string>((resolve) => (ended = () => resolve(text)));
  relayStream(
    { meter: meter as unknown as Meter, requestId: "req_test", first: null, batches, upstream: new UpstreamAbort(), carrier: null },
    protocol(meter),
  ).start({
    write(t) {
      text += t;
      return true;
    },
    onDrain() {},
    end() {
      text += "<end>";
      ended();
    },
  });
  return done;
}

const echo = (): RelayProtocol => ({
  transform: (event, ctx) => ("done" in event ? (ctx.delivered ? "[DONE]" : "") : String(event.data.n)),
  usage: () => ({ promptTokens: 1, completionTokens: 1, cachedTokens: 0 }),
  countLocal: () => Promise.resolve({ promptTokens: 1, completionTokens: 1, cachedTokens: 0 }),
  errorFrame: () => "error",
});

const ONE_TWO_DONE: StreamEvent[] = [{ data: { n: 1 }, raw: '{"n":1}' }, { data: { n: 2 }, raw: '{"n":2}' }, { done: true }];

describe("relayStream", () => {
  it("relays every event and ends with the charge, as a comment when the protocol carries none", async () => {
    expect(await runStream(ONE_TWO_DONE, null, echo, Promise.resolve({ units: 42n, usd: "0.5" }))).toBe(
      "12[DONE]: x-gateway-charge=42 x-gateway-charge-usd=0.5\n\n<end>",
    );
  });

  it("holds the stream's end until the charge is committed", async () => {
    let commit!: (charge: Charge) => void;
    const settled = new Promise<Charge | null>((resolve) => (commit = resolve));
    let atSettle = "";
    const closingAtDone = () => ({ ...echo(), closing: (event: StreamEvent) => "done" in event });
    const done = runStream(ONE_TWO_DONE, null, closingAtDone, settled, (text) => (atSettle = text));
    // The upstream has ended and the meter is settling: what came before the end is out, the end is not.
    await new Promise((resolve) => setImmediate(resolve));
    expect(atSettle).toBe("12");
    commit({ units: 7n, usd: null });
    expect(await done).toBe("12: x-gateway-charge=7\n\n[DONE]<end>");
  });

  it("an end that was not one is released by the event after it", async () => {
    const closingAtOne = () => ({ ...echo(), closing: (event: StreamEvent) => !("done" in event) && event.data.n === 1 });
    let atSettle = "";
    await runStream(ONE_TWO_DONE, null, closingAtOne, undefined, (text) => (atSettle = text));
    expect(atSettle).toBe("12[DONE]");
  });

  it("a protocol's own end follows what was held, once the charge is committed (a Gemini body told to a chat client)", async () => {
    const lastHeld = (end: () => string | Promise<string>) => () => ({
      ...echo(),
      closing: (event: StreamEvent) => !("done" in event) && event.data.n === 2,
      end,
    });
    const upstreamEnds: StreamEvent[] = [
      { data: { n: 1 }, raw: '{"n":1}' },
      { data: { n: 2 }, raw: '{"n":2}' },
    ];
    const charge = Promise.resolve({ units: 7n, usd: null });
    const expected = "1: x-gateway-charge=7\n\n2[END]<end>";
    expect(
      await runStream(
        upstreamEnds,
        null,
        lastHeld(() => "[END]"),
        charge,
      ),
    ).toBe(expected);
    expect(
      await runStream(
        upstreamEnds,
        null,
        lastHeld(() => Promise.resolve("[END]")),
        charge,
      ),
    ).toBe(expected);
  });

  it("a charge withdrawn (not committed in time) ends the stream with the in-band error instead of its end", async () => {
    const closingAtDone = () => ({ ...echo(), closing: (event: StreamEvent) => "done" in event });
    expect(await runStream(ONE_TWO_DONE, null, closingAtDone, Promise.resolve(null))).toBe("12error<end>");
  });

  it("leaves nothing of a finished stream for scavenges to promote", async () => {
    v8.setFlagsFromString("--expose-gc");
    // A context made after the flag is set has gc().
    const gc = vm.runInNewContext("gc") as (options: { type: "minor" }) => void;
    const streams = 200;
    const payloadBytes = 16 * 1024;
    const events: StreamEvent[] = [{ data: { n: 1 }, raw: '{"n":1}' }, { done: true }];
    const run = async (n: number) => {
      for (let i = 0; i < n; i++) await runStream(events, new Array(payloadBytes / 8).fill(i), echo);
      // Two scavenges: what survives both is promoted.
      gc({ type: "minor" });
      gc({ type: "minor" });
    };
    // The first streams promote what lives on (compiled code and its feedback, hidden classes).
    await run(streams);
    const profiler = new v8.GCProfiler();
    profiler.start();
    await run(streams);
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
