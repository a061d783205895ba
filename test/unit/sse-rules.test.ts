import { describe, expect, it } from "vitest";
import { readSse, type SseRules } from "../../src/providers/sse.js";
import { UpstreamError } from "../../src/providers/types.js";
import { batchesOf, bytes } from "../helpers/async-iter.js";

const frame = (event: string, data: object) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

describe("readSse with a protocol's rules", () => {
  it("keeps event names beside the data and omits them when absent", async () => {
    const batches = await batchesOf(readSse(bytes(frame("ping", { type: "ping" }), 'data: {"a":1}\n\n', "data: [DONE]\n\n")));
    expect(batches).toEqual([
      [{ data: { type: "ping" }, raw: '{"type":"ping"}', event: "ping" }],
      [{ data: { a: 1 }, raw: '{"a":1}' }],
      [{ done: true }],
    ]);
    expect(Object.keys((batches[1] as object[])[0]!)).toEqual(["data", "raw"]);
  });

  it("stops at the last event and reads nothing after it", async () => {
    const rules: SseRules = { isLast: (d) => d.type === "stop" };
    const batches = await batchesOf(
      readSse(bytes(`${frame("a", { type: "a" })}${frame("stop", { type: "stop" })}${frame("late", { type: "late" })}`), rules),
    );
    expect(batches).toHaveLength(1);
    expect((batches[0] as { data: unknown }[]).map((e) => e.data)).toEqual([{ type: "a" }, { type: "stop" }]);
  });

  it("treats a body that ends before the last event as dropped", async () => {
    const rules: SseRules = { isLast: (d) => d.type === "stop" };
    await expect(batchesOf(readSse(bytes(frame("a", { type: "a" })), rules))).rejects.toMatchObject({ failure: "protocol" });
  });

  it("lets a body end after a completing event when the protocol has no last event", async () => {
    const rules: SseRules = { isComplete: (d) => d.finished === true };
    expect(
      await batchesOf(readSse(bytes('data: {"n":1}\n\n', 'data: {"finished":true}\n\n', 'data: {"usage":1}\n\n'), rules)),
    ).toHaveLength(3);
    await expect(batchesOf(readSse(bytes('data: {"n":1}\n\n'), rules))).rejects.toBeInstanceOf(UpstreamError);
  });

  it("raises an in-stream error after yielding the events before it", async () => {
    const rules: SseRules = { toError: (d) => (d.type === "error" ? new UpstreamError("status", 529) : null) };
    const events = readSse(bytes(`${frame("a", { type: "a" })}${frame("error", { type: "error", error: { message: "secret" } })}`), rules);
    expect(await events.next()).toEqual([{ data: { type: "a" }, raw: '{"type":"a"}', event: "a" }]);
    await expect(events.next()).rejects.toMatchObject({ failure: "status", status: 529, message: "upstream answered 529" });
  });
});
