import { describe, expect, it } from "vitest";
import { CLOCK_SKEW_MS, requestRowRange, retainedSince } from "../../src/analytics/log-range.js";
import { addDays, dayOf, daysBetween, dayStart, partitionDay, partitionName } from "../../src/analytics/partition-days.js";
import { newRequestId, requestIdTime } from "../../src/ids.js";

describe("request ids", () => {
  it("carry the millisecond they were minted in UUIDv7's layout", () => {
    const ms = Date.parse("2026-11-29T18:09:33.123Z");
    const id = newRequestId(ms);
    expect(id).toMatch(/^req_[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
    expect(requestIdTime(id)?.toISOString()).toBe("2026-11-29T18:09:33.123Z");
    expect(newRequestId(ms)).not.toBe(id);
  });

  it("sort by time, and an old random id or a foreign one tells no time", () => {
    expect(newRequestId(1_000) < newRequestId(2_000)).toBe(true);
    expect(requestIdTime("req_3f2a9c1e0b7d4e8f9a6b5c4d3e2f1a0b")).toBeNull();
    expect(requestIdTime("req_c1")).toBeNull();
    expect(requestIdTime(`x${newRequestId()}`)).toBeNull();
  });
});

describe("day partitions", () => {
  it("name a UTC day and read it back; other tables are no day", () => {
    expect(partitionName("2026-02-28")).toBe("request_logs_p20260228");
    expect(partitionDay("request_logs_p20260228")).toBe("2026-02-28");
    expect(partitionDay("request_logs_p20260230")).toBeNull();
    expect(partitionDay("request_logs_p20261399")).toBeNull();
    expect(partitionDay("request_logs_default")).toBeNull();
    expect(partitionDay("request_logs_unpartitioned")).toBeNull();
  });

  it("count days across month, year and leap-day ends", () => {
    expect(addDays("2028-02-28", 1)).toBe("2028-02-29");
    expect(addDays("2026-12-31", 1)).toBe("2027-01-01");
    expect(addDays("2026-03-01", -1)).toBe("2026-02-28");
    expect(daysBetween("2026-12-30", "2027-01-02")).toEqual(["2026-12-30", "2026-12-31", "2027-01-01", "2027-01-02"]);
    expect(daysBetween("2026-01-02", "2026-01-01")).toEqual([]);
    expect(dayOf(new Date("2026-11-29T23:59:59.999Z"))).toBe("2026-11-29");
    expect(dayStart("2026-11-29").toISOString()).toBe("2026-11-29T00:00:00.000Z");
    expect(() => dayStart("2026-02-30")).toThrow();
  });
});

describe("log ranges", () => {
  const now = new Date("2026-11-29T12:00:00.000Z");
  it("a timed id: from its time less the clock skew to the longest a request takes to resolve", () => {
    const minted = Date.parse("2026-11-20T10:00:00.000Z");
    expect(requestRowRange(newRequestId(minted), now, 90, 3_600_000)).toEqual({
      from: new Date(minted - CLOCK_SKEW_MS),
      to: new Date(minted + 3_600_000 + CLOCK_SKEW_MS),
    });
  });

  it("an id without a time: what the retention keeps, or everything when it keeps all", () => {
    const old = "req_3f2a9c1e0b7d4e8f9a6b5c4d3e2f1a0b";
    expect(requestRowRange(old, now, 90, 3_600_000)).toEqual({ from: retainedSince(now, 90), to: null });
    expect(retainedSince(now, 0)).toBeNull();
    expect(retainedSince(now, 1)?.toISOString()).toBe("2026-11-28T11:55:00.000Z");
  });
});
