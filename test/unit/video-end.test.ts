import { describe, expect, it } from "vitest";
import { endingOf, type VideoVerdict } from "../../src/media/video-end.js";
import type { DurableRow } from "../../src/quota/durable-sql.js";
import type { DurableStatus } from "../../src/quota/types.js";

// What a video job ends as is decided by what its hold became in the same transaction (docs/billing.md, "Video
// quota"): a posted hold is a completed job at the posted charge, anything else a failed job that charged nothing.

const hold = (status: DurableStatus, charged: bigint | null = null): DurableRow => ({
  accountId: "1",
  amount: 500n,
  before: "pending",
  status,
  charged,
  reference: "video:x",
  expiresAt: new Date(0),
});

const videos = [{ url: "https://upstream.example/v.mp4", duration: 5 }];
const completed: VideoVerdict = { status: "completed", charge: 450n, videos };
const failed: VideoVerdict = { status: "failed", code: "upstream_timeout" };

describe("endingOf", () => {
  it("a completed job whose hold was posted is completed at the charge the ledger holds, with its videos", () => {
    expect(endingOf(completed, hold("posted", 450n))).toEqual({ status: "completed", charged: 450n, videos, code: null });
  });

  it("a failed job whose hold was voided (or had expired) is failed with its code and charges nothing", () => {
    for (const status of ["voided", "expired"] as const) {
      expect(endingOf(failed, hold(status))).toEqual({ status: "failed", charged: 0n, videos: null, code: "upstream_timeout" });
    }
  });

  it("a failure seen after the hold was posted ends the job completed at the posted charge: the charge stands", () => {
    expect(endingOf(failed, hold("posted", 300n))).toEqual({ status: "completed", charged: 300n, videos: null, code: null });
  });

  it("a completion whose hold can no longer be posted (voided, or gone) ends the job failed, charging nothing", () => {
    for (const row of [hold("voided"), undefined]) {
      expect(endingOf(completed, row)).toEqual({ status: "failed", charged: 0n, videos: null, code: "upstream_error" });
    }
  });
});
