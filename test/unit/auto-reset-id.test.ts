import { describe, expect, it } from "vitest";
import { autoResetUseId } from "../../src/quota/auto-reset.js";

// The automatic reset's use id (docs/billing.md, "Automatic resets"): one per lease and sync sequence, so the
// attempt retried after a lost reply is the same use and never a second reset.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("autoResetUseId", () => {
  it("is the same for the same lease and sequence, and a UUID PostgreSQL takes", () => {
    const lease = "0b7c4a52-9f1e-4d3c-8a6b-5e4f3d2c1b0a";
    expect(autoResetUseId(lease, 7)).toBe(autoResetUseId(lease, 7));
    for (let seq = 1; seq < 200; seq++) expect(autoResetUseId(lease, seq)).toMatch(UUID);
  });

  it("differs between sequences and between leases", () => {
    const a = "0b7c4a52-9f1e-4d3c-8a6b-5e4f3d2c1b0a";
    const b = "0b7c4a52-9f1e-4d3c-8a6b-5e4f3d2c1b0b";
    const ids = new Set<string>();
    for (let seq = 1; seq <= 100; seq++) {
      ids.add(autoResetUseId(a, seq));
      ids.add(autoResetUseId(b, seq));
    }
    expect(ids.size).toBe(200);
  });
});
