import { describe, expect, it } from "vitest";
import { COLUMNS, copyTextRows } from "../../src/analytics/copy-rows.js";
import { encodeRow } from "../../src/analytics/row-json.js";
import type { RequestLogRow } from "../../src/analytics/types.js";

const row = (overrides: Partial<RequestLogRow> = {}): RequestLogRow => ({
  requestId: "req_0123456789abcdef0123456789abcdef",
  userId: "6f1c1a52-3a0e-4c55-9d55-2c1f0e4f7a11",
  keyId: null,
  route: "/v1/chat/completions",
  clientProtocol: "openai",
  publicModel: "m1",
  upstreamModel: null,
  provider: null,
  fallbackPath: [],
  status: 429,
  errorClass: "quota_exceeded",
  errorCode: "insufficient_quota",
  inputTokens: 0,
  outputTokens: 0,
  cachedTokens: 0,
  quotaCharged: 0n,
  costUsd: null,
  upstreamCostUsd: null,
  usageSource: "none",
  gptImageUsageFallback: null,
  latencyMs: 0.5,
  ttfbMs: null,
  streamed: false,
  receivedAt: new Date("2026-11-29T10:00:00.000Z"),
  createdAt: new Date("2026-11-29T10:00:00.250Z"),
  ...overrides,
});

const fields = (r: RequestLogRow) => {
  const line = copyTextRows([encodeRow(r)!]);
  expect(line.endsWith("\n")).toBe(true);
  const values = line.slice(0, -1).split("\t");
  expect(values).toHaveLength(COLUMNS.length);
  return Object.fromEntries(COLUMNS.map((c, i) => [c, values[i]]));
};

describe("copyTextRows", () => {
  it("carries every key encodeRow writes, and only those", () => {
    expect([...COLUMNS].sort()).toEqual(Object.keys(JSON.parse(encodeRow(row())!) as object).sort());
  });

  it("writes NULL as \\N, booleans as t/f, numbers and decimals as their text, an empty array as {}", () => {
    const f = fields(row({ quotaCharged: 9_007_199_254_740_991n, costUsd: "0.000000000001", upstreamCostUsd: "0" }));
    expect(f).toMatchObject({
      key_id: "\\N",
      upstream_model: "\\N",
      ttfb_ms: "\\N",
      streamed: "f",
      status: "429",
      quota_charged: "9007199254740991",
      latency_ms: "0.500",
      cost_usd: "0.000000000001",
      upstream_cost_usd: "0",
      fallback_path: "{}",
      created_at: "2026-11-29T10:00:00.250Z",
    });
  });

  it("escapes what would end or change a field: backslash, tab, newline, carriage return", () => {
    const f = fields(row({ route: "a\tb\nc\rd\\e", publicModel: "\\N", upstreamModel: "ünï 😀" }));
    expect(f.route).toBe("a\\tb\\nc\\rd\\\\e");
    // The text \N, not NULL: its backslash is doubled.
    expect(f.public_model).toBe("\\\\N");
    expect(f.upstream_model).toBe("ünï 😀");
  });

  it("quotes every array element, so commas, braces, quotes, spaces, empty strings and NULL stay elements", () => {
    const f = fields(row({ fallbackPath: ["a,b", '"q"', "{x}", " s ", "", "NULL", "b\\s", "t\tn"] }));
    // Array literal: "a,b","\"q\"",…; then COPY's escaping doubles each backslash and writes the tab as \t.
    expect(f.fallback_path).toBe('{"a,b","\\\\"q\\\\"","{x}"," s ","","NULL","b\\\\\\\\s","t\\tn"}');
  });

  it("writes one line per row", () => {
    const text = copyTextRows([encodeRow(row())!, encodeRow(row({ requestId: "req_2" }))!]);
    expect(text.split("\n")).toHaveLength(3);
  });
});
