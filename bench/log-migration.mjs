// The upgrade to the partitioned request log (migration 0025) on a log of millions of rows, measured (docs/
// performance.md, "The request log's migration to day partitions"): the migration itself (one transaction that
// renames the old table and creates the partitioned one), then the move of the old rows in batches
// (moveUnpartitioned, as the log_partitions task runs it), each batch its own short transaction.
//
//   npm run build && node bench/log-migration.mjs        # ROWS=5000000 BATCH=5000 by default
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres ROWS=200000 node bench/log-migration.mjs
//
// It makes a database of its own on DATABASE_URL's server (the machine PostgreSQL by default), migrates it to
// 0024, fills request_logs with ROWS rows spread over the last 90 days, then times the rest. The longest
// transaction of the move bounds the longest any lock of the move is held; the migration's transaction holds the
// old table's exclusive lock for all of its duration. The database is dropped at the end.
import { randomBytes } from "node:crypto";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { moveUnpartitioned } from "../dist/src/analytics/partitions.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ROWS = Number(process.env.ROWS ?? 5_000_000);
const BATCH = Number(process.env.BATCH ?? 5000);
const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const FILL_CHUNK = 500_000;

const seconds = (ms) => (ms / 1000).toFixed(1);

/** The migrations folder as it was before 0025: the SQL files and the journal up to 0024. */
function migrationsBefore(tag) {
  const dir = mkdtempSync(path.join(tmpdir(), "log-migration-"));
  cpSync(path.join(root, "migrations"), dir, { recursive: true });
  const journalPath = path.join(dir, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8"));
  journal.entries = journal.entries.filter((e) => e.tag < tag);
  writeFileSync(journalPath, JSON.stringify(journal));
  return dir;
}

// Rows shaped as the gateway writes them: a few hundred users, a handful of models, 2% failures, spread evenly
// over 90 days.
const FILL = `
insert into request_logs (request_id, user_id, key_id, route, client_protocol, public_model, upstream_model, provider,
  fallback_path, status, error_class, error_code, input_tokens, output_tokens, cached_tokens, quota_charged, usage_source,
  latency_ms, ttfb_ms, streamed, received_at, created_at)
select 'req_' || md5(g::text || $3), ('00000000-0000-4000-8000-' || lpad(to_hex(g % 500), 12, '0'))::uuid, null,
  '/v1/chat/completions', 'openai', 'model-' || (g % 7), 'upstream-' || (g % 7), 'main', array['main'],
  case when g % 50 = 0 then 502 else 200 end, case when g % 50 = 0 then 'upstream' end,
  case when g % 50 = 0 then 'upstream_error' end, 100 + g % 900, 50 + g % 400, 0, 150 + g % 1300, 'upstream',
  12.5, 3.25, g % 2 = 0, t, t
from generate_series($1::int, $2::int) g, lateral (select now() - (g::float8 / $4::int) * interval '90 days' as t) x`;

async function main() {
  const name = `gw_bench_logmig_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const before = migrationsBefore("0025");
  const client = new pg.Client({ connectionString: url.toString() });
  const pool = new pg.Pool({ connectionString: url.toString(), max: 4 });
  try {
    await client.connect();
    await migrate(drizzle(client), { migrationsFolder: before });
    const salt = randomBytes(4).toString("hex");
    let t = performance.now();
    for (let from = 1; from <= ROWS; from += FILL_CHUNK) {
      await client.query(FILL, [from, Math.min(from + FILL_CHUNK - 1, ROWS), salt, ROWS]);
    }
    await client.query("vacuum analyze request_logs");
    console.log(`filled ${ROWS} rows in ${seconds(performance.now() - t)} s`);

    t = performance.now();
    await migrate(drizzle(client), { migrationsFolder: path.join(root, "migrations") });
    const migrationMs = performance.now() - t;
    console.log(`migration 0025 (one transaction; the old table's exclusive lock for all of it): ${migrationMs.toFixed(0)} ms`);

    // Every transaction of the move, begin to commit.
    const transactions = [];
    pool.on("acquire", (c) => {
      if (c.timed) return;
      c.timed = true;
      const query = c.query.bind(c);
      let began = 0;
      c.query = (...args) => {
        const text = typeof args[0] === "string" ? args[0] : args[0]?.text;
        if (text === "begin") began = performance.now();
        const result = query(...args);
        if ((text === "commit" || text === "rollback") && result?.then)
          result.then(
            () => transactions.push(performance.now() - began),
            () => {},
          );
        return result;
      };
    });
    t = performance.now();
    const moved = await moveUnpartitioned(pool, BATCH);
    const moveMs = performance.now() - t;
    const { rows } = await client.query(
      "select count(*)::int as n, to_regclass('request_logs_unpartitioned') is null as dropped from request_logs",
    );
    const longest = Math.max(...transactions);
    const sorted = [...transactions].sort((a, b) => a - b);
    console.log(
      `move: ${moved.rows} rows in ${seconds(moveMs)} s (${Math.round(moved.rows / (moveMs / 1000))} rows/s), ${transactions.length} transactions, ` +
        `median ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} ms, longest ${longest.toFixed(0)} ms; old table dropped: ${rows[0].dropped}; ` +
        `request_logs holds ${rows[0].n} rows`,
    );
    if (rows[0].n !== ROWS || !moved.done) throw new Error("the move did not move every row");
  } finally {
    await client.end().catch(() => {});
    await pool.end().catch(() => {});
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    rmSync(before, { recursive: true, force: true });
  }
}

await main();
