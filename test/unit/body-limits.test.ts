import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { jsonLength } from "../../src/metering/estimate.js";
import { transportOf } from "../../src/runtime/connection-bounds.js";
import { nestsDeeperThan } from "../../src/server/body.js";

// The request-body and connection bounds of issue 20 (docs/security.md, "Connections and request bodies").

describe("nestsDeeperThan", () => {
  const depthOf = (value: unknown): number =>
    value === null || typeof value !== "object" ? 0 : 1 + Math.max(0, ...Object.values(value).map(depthOf));
  const cases: unknown[] = [
    {},
    [[[]]],
    { a: [{ b: "[[[[{{{{" }], c: 'x\\"[[[' },
    { "k[[[\\": [1, [2, [3]]], s: "\\\\" },
    ["\\", [['"[[']]],
  ];
  it.each(cases)("measures %j as JSON.parse nests it, brackets in strings and escapes included", (value) => {
    const text = JSON.stringify(value);
    const depth = depthOf(value);
    expect(nestsDeeperThan(text, depth)).toBe(false);
    if (depth > 0) expect(nestsDeeperThan(text, depth - 1)).toBe(depth - 1 < text.length);
  });
});

describe("jsonLength", () => {
  it("is JSON.stringify's length, without recursion", () => {
    const values: unknown[] = [
      1,
      'a"b\u0000é',
      null,
      true,
      [],
      {},
      [1, [2, { a: "x", b: [null, false] }]],
      { "k\n": {}, u: undefined },
      [undefined],
    ];
    for (const value of values) expect(jsonLength(value)).toBe(JSON.stringify(value).length);
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(jsonLength(deep)).toBe(200_001);
  });
});

describe("defaults", () => {
  it("caps bodies, JSON depth and connections, and cuts a trickled head within 20 s of its first byte", () => {
    const { server } = parseConfig({}, "defaults");
    expect(server).toMatchObject({
      max_body_bytes: 16 * 1024 * 1024,
      small_body_bytes: 16 * 1024,
      body_budget_bytes: 256 * 1024 * 1024,
      body_timeout_ms: 30_000,
      body_min_bytes_per_second: 1024,
      body_min_rate_grace_ms: 5_000,
      max_json_depth: 128,
      max_connections: 4096,
      headers_timeout_ms: 15_000,
      connections_check_interval_ms: 5_000,
    });
    const transport = transportOf(server);
    expect(transport.headersTimeoutMs + transport.checkIntervalMs).toBeLessThanOrEqual(20_000);
    // Node's own request timeout is a backstop after the body's own bound, which answers with the envelope.
    expect(transport.requestTimeoutMs).toBeGreaterThan(server.headers_timeout_ms + server.body_timeout_ms);
  });
});
