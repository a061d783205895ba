import { describe, expect, it } from "vitest";
import { incidentLines, incidentRow, publishedLine } from "../../../worker-kit/tui/state/incident-text.js";
import { incident, technical } from "./incident-fixtures.js";

describe("incident text", () => {
  it("says both aggregates, or that a signal never crossed its threshold", () => {
    expect(incidentLines(incident({ affected_users: null, technical }))).toEqual([
      "demo-small failing with upstream_error [candidate]",
      "model demo-small · error upstream_error · 4 linked cases",
      "affected users: never above the threshold",
      "technical: 12 errors of 40 requests (30.0%) in 15 min, seen 12:05 UTC",
      "summary: (none)",
      "unpublished: needs confirmation, corroboration, a summary",
    ]);
  });

  it("names what publishing still needs, or when it was published", () => {
    const ready = incident({ status: "confirmed", technically_corroborated_at: "2025-03-01T12:05:00.000Z", public_summary: "x" });
    expect(publishedLine(ready)).toBe("unpublished: ready to publish");
    expect(publishedLine({ ...ready, public_summary: null })).toBe("unpublished: needs a summary");
    expect(publishedLine({ ...ready, published_at: "2025-03-01T12:10:00.000Z" })).toBe("published since 2025-03-01T12:10:00.000Z");
    expect(incidentRow({ ...ready, published_at: "2025-03-01T12:10:00.000Z" })).toBe(
      "confirmed  demo-small  upstream_error  4 cases  published",
    );
  });
});
