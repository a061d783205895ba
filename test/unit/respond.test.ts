import type { Context } from "hono";
import { describe, expect, it } from "vitest";
import type { AppEnv } from "../../src/server/context.js";
import { respondStream, respondText } from "../../src/server/respond.js";

// In-process calls (app.request) have no Node response: these paths build a WHATWG Response instead.
const inProcess = { env: undefined, get: () => "req_test" } as unknown as Context<AppEnv>;

describe("respond without a Node response", () => {
  it("answers text with the standard headers and the given ones", async () => {
    const res = respondText(inProcess, 201, '{"a":1}', { "content-type": "application/json" });
    expect(res.status).toBe(201);
    expect(Object.fromEntries(res.headers)).toMatchObject({
      "x-request-id": "req_test",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "content-type": "application/json",
    });
    expect(await res.text()).toBe('{"a":1}');
  });

  it("streams the chunks in order, skipping empty ones", async () => {
    async function* chunks() {
      yield "data: 1\n\n";
      yield "";
      yield "data: 2\n\n";
    }
    const res = respondStream(inProcess, { "content-type": "text/event-stream" }, chunks());
    expect(res.headers.get("x-request-id")).toBe("req_test");
    expect(await res.text()).toBe("data: 1\n\ndata: 2\n\n");
  });

  it("stops the chunk source when the reader cancels", async () => {
    let stopped = false;
    async function* chunks() {
      try {
        for (;;) yield "data: x\n\n";
      } finally {
        stopped = true;
      }
    }
    const reader = respondStream(inProcess, {}, chunks()).body!.getReader();
    await reader.read();
    await reader.cancel();
    expect(stopped).toBe(true);
  });
});
