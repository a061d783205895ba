import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Pool } from "undici";
import { describe, expect, it } from "vitest";
import { UpstreamAbort } from "../../src/providers/upstream-abort.js";

describe("UpstreamAbort", () => {
  it("is aborted once: one event however often abort() is called", () => {
    const abort = new UpstreamAbort();
    let events = 0;
    abort.on("abort", () => events++);
    expect(abort.aborted).toBe(false);
    abort.abort();
    abort.abort();
    expect(abort.aborted).toBe(true);
    expect(events).toBe(1);
  });

  it("cancels an undici request that is waiting for its answer", async () => {
    // The server never answers: only the abort can end the request.
    const server = createServer(() => {});
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      const abort = new UpstreamAbort();
      const pending = pool.request({ method: "POST", path: "/", body: "{}", signal: abort });
      setTimeout(() => abort.abort(), 20);
      await expect(pending).rejects.toMatchObject({ name: "AbortError" });
      expect(abort.listenerCount("abort")).toBe(0);
    } finally {
      await pool.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
