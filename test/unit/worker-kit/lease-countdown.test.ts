import { describe, expect, it } from "vitest";
import { formatMinutesSeconds, leaseCountdown } from "../../../worker-kit/tui/state/lease-countdown.js";

const NOW = Date.parse("2025-03-01T12:00:00.000Z");
const at = (ms: number) => new Date(NOW + ms).toISOString();

describe("leaseCountdown", () => {
  it("formats minutes and seconds", () => {
    expect(formatMinutesSeconds(300)).toBe("05:00");
    expect(formatMinutesSeconds(61)).toBe("01:01");
    expect(formatMinutesSeconds(0)).toBe("00:00");
    expect(formatMinutesSeconds(-5)).toBe("00:00");
  });

  it("runs, warns under 30 s and is gone at zero", () => {
    expect(leaseCountdown(at(300_000), NOW)).toEqual({ state: "running", secondsLeft: 300, text: "lease 05:00 left" });
    expect(leaseCountdown(at(30_000), NOW).state).toBe("running");
    expect(leaseCountdown(at(29_000), NOW)).toMatchObject({
      state: "ending",
      secondsLeft: 29,
      text: expect.stringMatching(/^lease 00:29 left: under 30 s/),
    });
    // Rounded up: a lease with 0.2 s left still shows a second, never "00:00" while it is valid.
    expect(leaseCountdown(at(200), NOW)).toMatchObject({ state: "ending", secondsLeft: 1 });
    expect(leaseCountdown(at(0), NOW)).toMatchObject({ state: "expired", secondsLeft: 0, text: expect.stringContaining("lease gone") });
    expect(leaseCountdown(at(-60_000), NOW).state).toBe("expired");
  });

  it("treats an unreadable expiry as gone rather than endless", () => {
    expect(leaseCountdown("not a time", NOW).state).toBe("expired");
  });
});
