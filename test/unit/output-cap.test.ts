import { describe, expect, it } from "vitest";
import { OutputMeter, streamOutputCap } from "../../src/metering/relays/output-cap.js";
import { countTextTokens } from "../../src/metering/estimate.js";

const limits = { overrun_ratio: 0.1, overrun_tokens: 64 };

describe("streamOutputCap", () => {
  it("is the limit plus the larger of 10% and 64 tokens, per choice; the model's maximum caps or stands in", () => {
    expect(streamOutputCap(100, undefined, 1, limits)).toBe(164);
    expect(streamOutputCap(10_000, undefined, 1, limits)).toBe(11_000);
    expect(streamOutputCap(100, undefined, 2, limits)).toBe(264);
    expect(streamOutputCap(null, 1000, 1, limits)).toBe(1100);
    expect(streamOutputCap(5000, 1000, 1, limits)).toBe(1100);
    expect(streamOutputCap(500, 1000, 1, limits)).toBe(564);
    expect(streamOutputCap(undefined, undefined, 1, limits)).toBeNull();
  });
});

describe("OutputMeter", () => {
  /** Feeds `events` deltas one by one; returns how often the tokenizer ran and the delta where the cap was passed. */
  async function feed(cap: number, events: number, delta: string) {
    const text: string[] = [];
    const meter = new OutputMeter(text, cap);
    let counts = 0;
    for (let i = 0; i < events; i++) {
      text.push(delta);
      const verdict = meter.check();
      if (!verdict) continue;
      counts++;
      if (await verdict) return { counts, passedAt: i + 1 };
    }
    return { counts, passedAt: null };
  }

  it("never tokenizes a stream whose bytes stay within the cap", async () => {
    expect(await feed(1000, 900, "x")).toEqual({ counts: 0, passedAt: null });
  });

  it("tokenizes at growing intervals, never per event, and stops just past the cap", async () => {
    const { counts, passedAt } = await feed(1100, 20_000, " hello");
    expect(passedAt).not.toBeNull();
    const tokens = await countTextTokens(" hello".repeat(passedAt!));
    expect(tokens).toBeGreaterThan(1100);
    expect(tokens).toBeLessThanOrEqual(1100 + 16);
    // About 1100 events after the bound first passes: a count every few events would be hundreds.
    expect(counts).toBeLessThan(40);
  });

  it("bounds multi-byte text by its bytes", async () => {
    const { passedAt } = await feed(200, 5000, "日本語");
    expect(await countTextTokens("日本語".repeat(passedAt!))).toBeGreaterThan(200);
  });
});
