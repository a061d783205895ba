import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { providerProtocols } from "../../src/config/catalog-schema.js";
import { adapterFactories } from "../../src/providers/registry.js";
import { FALLBACK_STATUSES, UpstreamError } from "../../src/providers/types.js";

/** Folders of src/providers that the protocols share rather than one of them (docs/architecture.md, "Layout"). */
const SHARED_FOLDERS = ["upstream-images"];

describe("provider registry", () => {
  it("registers every provider folder, under a protocol the config accepts", () => {
    const root = path.resolve("src/providers");
    const folders = readdirSync(root).filter((entry) => statSync(path.join(root, entry)).isDirectory() && !SHARED_FOLDERS.includes(entry));
    expect(folders.length).toBeGreaterThan(0);
    for (const folder of folders) {
      expect(providerProtocols).toContain(folder);
      expect(adapterFactories[folder as keyof typeof adapterFactories], `src/providers/${folder} is not in the registry`).toBeTypeOf(
        "function",
      );
    }
  });
});

describe("UpstreamError.retryable", () => {
  it.each([429, 500, 502, 503, 504, 529])("falls back on %i", (status) => {
    expect(new UpstreamError("status", status).retryable).toBe(true);
  });
  it.each([400, 401, 403, 404, 413, 422, 501])("never falls back on %i", (status) => {
    expect(new UpstreamError("status", status).retryable).toBe(false);
  });
  it("falls back on connection errors, timeouts and invalid answers, not on aborts", () => {
    expect(new UpstreamError("connect", null).retryable).toBe(true);
    expect(new UpstreamError("timeout", null).retryable).toBe(true);
    expect(new UpstreamError("protocol", 200).retryable).toBe(true);
    expect(new UpstreamError("aborted", null).retryable).toBe(false);
    expect([...FALLBACK_STATUSES].sort()).toEqual([429, 500, 502, 503, 504, 529]);
  });
});
