import { randomBytes, randomUUID } from "node:crypto";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertBatch } from "../../src/analytics/insert-batch.js";
import { encodeRow, INSERT_ROWS } from "../../src/analytics/row-json.js";
import type { RequestLogRow } from "../../src/analytics/types.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { requestLogRow } from "../helpers/request-log-row.js";

// insertBatch (the writer's COPY, src/analytics/insert-batch.ts) against a real PostgreSQL: every value encodeRow
// produces stored as the journal's INSERT stores it, and a batch sent again writes none of its rows twice.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

const id = () => `req_${randomBytes(16).toString("hex")}`;

function plainRow(userId: string, overrides: Partial<RequestLogRow> = {}): RequestLogRow {
  return requestLogRow({
    requestId: id(),
    userId,
    keyId: randomUUID(),
    upstreamModel: "m1-2024-07-18",
    inputTokens: 12,
    outputTokens: 34,
    quotaCharged: 46n,
    latencyMs: 12.345,
    ttfbMs: 3.5,
    streamed: true,
    receivedAt: new Date(Date.now() - 1500),
    createdAt: new Date(),
    ...overrides,
  });
}

/** Values each chosen to break a COPY field, an array literal, a numeric or a bound. */
const NASTY: Partial<RequestLogRow>[] = [
  { route: "a\tb\nc\rd\\e", publicModel: "\\N", upstreamModel: "ünï 😀 中文", provider: "q\"uo'te" },
  { fallbackPath: ["a,b", '"q"', "{x}", " s ", "", "NULL", "b\\s", "t\tn", "l\nf", "😀"] },
  { keyId: null, upstreamModel: null, provider: null, ttfbMs: null, errorClass: "upstream_error", errorCode: "upstream_error" },
  { costUsd: "0.000000000001", upstreamCostUsd: "123456789012345678901234567890.123456789", quotaCharged: 9_007_199_254_740_991n },
  { costUsd: "0", upstreamCostUsd: "10000", quotaCharged: 0n, latencyMs: 999_999_999.999, ttfbMs: 0 },
  { inputTokens: 2_147_483_647, outputTokens: 0, cachedTokens: 7, status: 32_767, streamed: false },
  { route: "x".repeat(300), publicModel: "nul\0in\0side", gptImageUsageFallback: "missing_cache_breakdown" },
  { receivedAt: new Date("1999-12-31T23:59:59.999Z"), createdAt: new Date("2000-01-01T00:00:00.001Z") },
  { receivedAt: new Date("2026-11-29T23:59:59.999Z"), createdAt: new Date("2026-11-30T00:00:00.000Z"), latencyMs: 0.001 },
];

async function stored(userId: string) {
  const { rows } = await db.pool.query<Record<string, unknown>>(
    "select * from request_logs where user_id = $1 order by created_at, route, fallback_path",
    [userId],
  );
  return rows;
}

async function withClient<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  try {
    return await fn(client);
  } finally {
    client.release();
  }
}

describe("insertBatch", () => {
  it("stores every value encodeRow produces exactly as the journal's INSERT stores it", async () => {
    const copied = randomUUID();
    const inserted = randomUUID();
    const shapes = NASTY.map((o) => ({ ...plainRow(copied), ...o }));
    await withClient((c) =>
      insertBatch(
        c,
        shapes.map((r) => encodeRow(r)!),
      ),
    );
    const same = shapes.map((r) => encodeRow({ ...r, requestId: `${r.requestId}_ref`, userId: inserted })!);
    await db.pool.query(INSERT_ROWS, [`[${same.join(",")}]`]);

    const viaCopy = await stored(copied);
    const viaInsert = await stored(inserted);
    expect(viaCopy).toHaveLength(NASTY.length);
    expect(viaCopy.map((r) => ({ ...r, request_id: `${r.request_id as string}_ref`, user_id: inserted }))).toEqual(viaInsert);
    // And read back as written, for the values most likely to be mangled.
    const byRoute = new Map(viaCopy.map((r) => [r.route, r]));
    expect(byRoute.get("a\tb\nc\rd\\e")).toMatchObject({ public_model: "\\N", upstream_model: "ünï 😀 中文", provider: "q\"uo'te" });
    const arrays = viaCopy.map((r) => r.fallback_path as string[]);
    expect(arrays).toContainEqual(["a,b", '"q"', "{x}", " s ", "", "NULL", "b\\s", "t\tn", "l\nf", "😀"]);
    expect(viaCopy.map((r) => r.upstream_cost_usd)).toContain("123456789012345678901234567890.123456789");
    expect(viaCopy.map((r) => r.cost_usd)).toContain("0.000000000001");
    expect(viaCopy.map((r) => r.quota_charged)).toContain("9007199254740991");
  });

  it("writes a batch sent again, whole or with new rows, once per row, on the same connection", async () => {
    const userId = randomUUID();
    const rows = Array.from({ length: 50 }, (_, i) => encodeRow(plainRow(userId, { createdAt: new Date(Date.now() + i) }))!);
    await withClient(async (c) => {
      await insertBatch(c, rows.slice(0, 20));
      // The first 20 again (a reply lost after the commit) with 30 new ones behind them.
      await insertBatch(c, rows);
      await insertBatch(c, rows);
      const { rows: n } = await c.query<{ n: number; distinct: number }>(
        "select count(*)::int as n, count(distinct request_id)::int as distinct from request_logs where user_id = $1",
        [userId],
      );
      expect(n[0]).toEqual({ n: 50, distinct: 50 });
    });
  });

  it("fails a batch the database refuses with the database's error, and leaves the connection usable", async () => {
    const userId = randomUUID();
    const good = encodeRow(plainRow(userId))!;
    const bad = good.replace(/"status":200/, '"status":99999').replace(/"request_id":"req_/, '"request_id":"bad_');
    await withClient(async (c) => {
      await expect(insertBatch(c, [good, bad])).rejects.toMatchObject({ code: "22003" });
      await insertBatch(c, [good]);
    });
    expect(await stored(userId)).toHaveLength(1);
  });
});
