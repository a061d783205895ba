import { describe, expect, it } from "vitest";
import { LONGEST_GUARDED_MS, waitForOneUtcDay } from "../helpers/one-utc-day.js";

const at = (iso: string) => Date.parse(iso);

describe("waitForOneUtcDay", () => {
  it("does not wait when the day has room for the whole timeout", () => {
    expect(waitForOneUtcDay(at("2026-11-29T12:00:00Z"), 60_000)).toBe(0);
    expect(waitForOneUtcDay(at("2026-11-29T23:58:59.999Z"), 60_000)).toBe(0);
    expect(waitForOneUtcDay(at("2026-11-30T00:00:00Z"), 60_000)).toBe(0);
  });

  it("waits until a second past midnight when the test could cross it", () => {
    expect(waitForOneUtcDay(at("2026-11-29T23:59:01Z"), 60_000)).toBe(59_000 + 1_000);
    expect(waitForOneUtcDay(at("2026-11-29T23:59:59.500Z"), 30_000)).toBe(500 + 1_000);
    expect(waitForOneUtcDay(at("2026-12-31T23:55:00Z"), LONGEST_GUARDED_MS)).toBe(300_000 + 1_000);
  });

  it("holds back no test allowed longer than the longest it guards", () => {
    expect(waitForOneUtcDay(at("2026-11-29T23:59:30Z"), LONGEST_GUARDED_MS + 1)).toBe(0);
  });
});
