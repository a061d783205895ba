// The outbox drainer's throughput (docs/performance.md): N outbox records on MAIN_URL moved by one drainer to LOG_URL
// (both migrated: `DATABASE_URL=… npx gateway migrate`); run `npm run build` first. N (50000) and BATCH (1000).
import { randomUUID, randomBytes } from "node:crypto";
import pg from "pg";
const root = new URL("../dist/src", import.meta.url).href;
const { startOutboxDrainer } = await import(`${root}/analytics/outbox-drainer.js`);
const { outboxInserts } = await import(`${root}/analytics/outbox-sql.js`);
const { encodeRow } = await import(`${root}/analytics/row-json.js`);
const { createLogger } = await import(`${root}/logger.js`);
const N = Number(process.env.N ?? 50000),
  batch = Number(process.env.BATCH ?? 1000);
const main = new pg.Pool({ connectionString: process.env.MAIN_URL, max: 4 });
const log = new pg.Pool({ connectionString: process.env.LOG_URL, max: 4 });
const row = () =>
  encodeRow({
    requestId: `req_${randomBytes(16).toString("hex")}`,
    userId: randomUUID(),
    keyId: null,
    route: "/v1/chat/completions",
    clientProtocol: "openai",
    publicModel: "m1",
    upstreamModel: "m1-1",
    provider: "mock",
    fallbackPath: [],
    status: 200,
    errorClass: null,
    errorCode: null,
    inputTokens: 10,
    outputTokens: 20,
    cachedTokens: 0,
    quotaCharged: 30n,
    costUsd: null,
    upstreamCostUsd: null,
    usageSource: "upstream",
    gptImageUsageFallback: null,
    latencyMs: 12.5,
    ttfbMs: 3.2,
    streamed: true,
    receivedAt: new Date(),
    createdAt: new Date(),
  });
for (let i = 0; i < N; i += 5000)
  await main.query(outboxInserts("$1::json"), [`[${Array.from({ length: Math.min(5000, N - i) }, row).join(",")}]`]);
const d = startOutboxDrainer({ main, analytics: log, logger: createLogger("silent"), batchSize: batch, intervalMs: 20 });
const t0 = performance.now();
for (;;) {
  const { rows } = await main.query("select count(*)::int n from request_log_outbox");
  if (rows[0].n === 0) break;
  await new Promise((r) => setTimeout(r, 50));
}
const s = (performance.now() - t0) / 1000;
await d.close();
const { rows } = await log.query("select count(*)::int n from request_logs");
console.log(JSON.stringify({ records: N, batch, seconds: +s.toFixed(2), per_second: Math.round(N / s), rows_in_analytics: rows[0].n }));
await main.end();
await log.end();
