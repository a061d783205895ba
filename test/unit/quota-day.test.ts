import { describe, expect, it } from "vitest";
import { nextResetAt, utcDay } from "../../src/time/day.js";

describe("the quota day (UTC)", () => {
  it("names the UTC day, up to the last millisecond before midnight", () => {
    expect(utcDay(new Date("2026-03-14T23:59:59.999Z"))).toBe("2026-03-14");
    expect(utcDay(new Date("2026-03-15T00:00:00.000Z"))).toBe("2026-03-15");
    expect(utcDay(new Date("2026-12-31T23:59:59.999Z"))).toBe("2026-12-31");
    expect(utcDay(new Date("2027-01-01T00:00:00.000Z"))).toBe("2027-01-01");
    // The last answer is cached: going back across midnight, and within the day, must still be right.
    expect(utcDay(new Date("2026-12-31T23:59:59.999Z"))).toBe("2026-12-31");
    expect(utcDay(new Date("2026-12-31T00:00:00.000Z"))).toBe("2026-12-31");
    expect(utcDay(new Date("2026-12-30T23:59:59.999Z"))).toBe("2026-12-30");
  });

  it("resets at the next 00:00 UTC, strictly after now", () => {
    expect(nextResetAt(new Date("2026-03-14T23:59:59.999Z"))).toEqual(new Date("2026-03-15T00:00:00.000Z"));
    expect(nextResetAt(new Date("2026-03-15T00:00:00.000Z"))).toEqual(new Date("2026-03-16T00:00:00.000Z"));
    expect(nextResetAt(new Date("2024-02-28T12:00:00.000Z"))).toEqual(new Date("2024-02-29T00:00:00.000Z"));
    expect(nextResetAt(new Date("2026-12-31T08:30:00.000Z"))).toEqual(new Date("2027-01-01T00:00:00.000Z"));
  });

  it("ignores the process time zone", () => {
    const saved = process.env.TZ;
    try {
      // +14:00 and -11:00: a local-time implementation would name the wrong day for most of these hours.
      for (const tz of ["Pacific/Kiritimati", "Pacific/Pago_Pago"]) {
        process.env.TZ = tz;
        expect(utcDay(new Date("2026-06-30T23:30:00Z"))).toBe("2026-06-30");
        expect(utcDay(new Date("2026-07-01T00:30:00Z"))).toBe("2026-07-01");
        expect(nextResetAt(new Date("2026-06-30T12:00:00Z"))).toEqual(new Date("2026-07-01T00:00:00Z"));
      }
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});
