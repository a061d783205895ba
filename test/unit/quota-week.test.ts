import { describe, expect, it } from "vitest";
import { parseExpiry } from "../../src/balances/reserve-resets.js";
import { isoWeek, nextWeekAt, weekStartAt } from "../../src/time/week.js";

// The weekly resets' period (docs/billing.md, "Reserve resets"): the ISO week in UTC, renewing Monday 00:00 UTC.

describe("the ISO week in UTC", () => {
  it.each([
    ["2026-11-23T00:00:00.000Z", "2026-W48", "2026-11-23T00:00:00.000Z", "2026-11-30T00:00:00.000Z"],
    ["2026-11-29T23:59:59.999Z", "2026-W48", "2026-11-23T00:00:00.000Z", "2026-11-30T00:00:00.000Z"],
    ["2026-11-30T00:00:00.000Z", "2026-W49", "2026-11-30T00:00:00.000Z", "2026-12-07T00:00:00.000Z"],
    // Year ends: 2026-01-01 is a Thursday (W01 of 2026); 2027-01-01 a Friday (still 2026-W53); 2024-12-30 opens 2025-W01.
    ["2026-01-01T12:00:00.000Z", "2026-W01", "2025-12-29T00:00:00.000Z", "2026-01-05T00:00:00.000Z"],
    ["2027-01-01T00:00:00.000Z", "2026-W53", "2026-12-28T00:00:00.000Z", "2027-01-04T00:00:00.000Z"],
    ["2024-12-30T08:00:00.000Z", "2025-W01", "2024-12-30T00:00:00.000Z", "2025-01-06T00:00:00.000Z"],
    ["1970-01-01T00:00:00.000Z", "1970-W01", "1969-12-29T00:00:00.000Z", "1970-01-05T00:00:00.000Z"],
  ])("%s is in %s, from %s until %s", (at, week, start, next) => {
    const now = new Date(at);
    expect(isoWeek(now)).toBe(week);
    expect(weekStartAt(now).toISOString()).toBe(start);
    expect(nextWeekAt(now).toISOString()).toBe(next);
  });

  it("ignores the process's time zone", () => {
    const tz = process.env.TZ;
    process.env.TZ = "Pacific/Kiritimati";
    try {
      expect(isoWeek(new Date("2026-11-29T23:30:00Z"))).toBe("2026-W48");
    } finally {
      process.env.TZ = tz;
    }
  });
});

describe("a gift's expiry", () => {
  it("reads a date as through that UTC day, an instant as itself, anything else as invalid", () => {
    expect(parseExpiry("2026-12-31")?.toISOString()).toBe("2027-01-01T00:00:00.000Z");
    expect(parseExpiry("2026-12-31T12:00:00Z")?.toISOString()).toBe("2026-12-31T12:00:00.000Z");
    expect(parseExpiry("2026-12-31T12:00:00+02:00")?.toISOString()).toBe("2026-12-31T10:00:00.000Z");
    for (const bad of ["2026-02-30", "31/12/2026", "tomorrow", "", "2026-13-01"]) expect(parseExpiry(bad), bad).toBeNull();
  });
});
