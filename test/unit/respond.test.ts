import type { Context } from "hono";
import { describe, expect, it } from "vitest";
import type { AppEnv } from "../../src/server/context.js";
import { respondBytes, respondStream, respondText, type BodySink, type PushedBody } from "../../src/server/respond.js";

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

  it("answers bytes in pieces joined, with the standard headers and the given ones", async () => {
    const res = respondBytes(inProcess, 200, [Buffer.from('{"a":"'), Buffer.from("QUJD"), Buffer.from('"}')], {
      "content-type": "application/json",
    });
    expect(res.status).toBe(200);
    expect(Object.fromEntries(res.headers)).toMatchObject({ "x-request-id": "req_test", "content-type": "application/json" });
    expect(await res.text()).toBe('{"a":"QUJD"}');
  });

  it("streams what the body pushes, in order, skipping empty writes", async () => {
    const body: PushedBody = {
      start(sink) {
        sink.write("data: 1\n\n");
        sink.write("");
        setImmediate(() => {
          sink.write("data: 2\n\n");
          sink.end();
        });
      },
      cancel: () => {},
    };
    const res = respondStream(inProcess, { "content-type": "text/event-stream" }, body);
    expect(res.headers.get("x-request-id")).toBe("req_test");
    expect(await res.text()).toBe("data: 1\n\ndata: 2\n\n");
  });

  it("asks the body to wait while the reader is behind, and cancels it when the reader cancels", async () => {
    let sink: BodySink | undefined;
    let cancelled = false;
    const reader = respondStream(inProcess, {}, { start: (s) => (sink = s), cancel: () => (cancelled = true) }).body!.getReader();
    expect(sink!.write("data: 1\n\n")).toBe(false);
    let resumed = false;
    sink!.onDrain(() => (resumed = true));
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("data: 1\n\n");
    expect(resumed).toBe(true);
    await reader.cancel();
    expect(cancelled).toBe(true);
    expect(sink!.write("data: 2\n\n")).toBe(false);
  });
});
