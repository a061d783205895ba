// What one request-log row costs PostgreSQL to write, per insert method (docs/performance.md, "Request-log writer:
// insert methods"): rows per second per PostgreSQL core = rows / CPU seconds of the backend that wrote them (/proc),
// beside the wall rate and the CPU this Node process spends per row (the gateway pays that too).
//
//   npm run bench:log-writer          # or, after a build: node bench/log-writer.mjs
//   DATABASE_URL=postgres://…         # the server to measure (default the machine's, postgres@127.0.0.1:5432);
//                                     # it must run on this machine (its backends' CPU is read from /proc)
//   BENCH_DB=embedded                 # the gateway's embedded PostgreSQL instead, started in a temp dir
//   ROWS=20000 ROUNDS=5               # rows per measurement, rounds (each round runs every method once, in turn)
//
// A scratch database gets a copy of request_logs partitioned by UTC day of created_at (primary key (request_id,
// created_at), three daily partitions and a default one, today's indexes and check); it is dropped at the end.
// Every method writes the same rows: encodeRow's JSON of realistic RequestLogRow values over three days, the
// writer's buffer as it is, so each method's client cost includes turning that JSON into what it sends.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { encodeRow } from "../dist/src/analytics/row-json.js";
import { startEmbeddedPostgres } from "../dist/src/db/embedded.js";
import { COLUMNS, copyTextRows } from "../dist/src/analytics/copy-rows.js";
import { insertBatch } from "../dist/src/analytics/insert-batch.js";
import { INSERT_ROWS, batchParameter } from "../dist/src/analytics/row-json.js";

const ROWS = Number(process.env.ROWS ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const DAY_MS = 86_400_000;
const DAY0 = Date.UTC(2026, 10, 27);

/** CPU of process `pid` so far, in ms (USER_HZ 100). */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const dayName = (ms) => new Date(ms).toISOString().slice(0, 10).replaceAll("-", "");
const dayText = (ms) => new Date(ms).toISOString().slice(0, 10);

/** request_logs as src/analytics/schema.ts has it, partitioned by UTC day of created_at. */
const SCHEMA = [
  `create table request_logs (
    request_id text not null, user_id uuid not null, key_id uuid, route text not null, client_protocol text not null,
    public_model text not null, upstream_model text, provider text, fallback_path text[] not null, status smallint not null,
    error_class text, error_code text, input_tokens integer not null, output_tokens integer not null,
    cached_tokens integer not null, quota_charged bigint not null, cost_usd numeric, upstream_cost_usd numeric,
    usage_source text not null, gpt_image_usage_fallback text, latency_ms numeric(12,3) not null, ttfb_ms numeric(12,3),
    streamed boolean not null, received_at timestamptz, created_at timestamptz not null,
    constraint request_logs_pkey primary key (request_id, created_at),
    constraint request_logs_quota_charged_range check (quota_charged between 0 and 9007199254740991)
  ) partition by range (created_at)`,
  `create index request_logs_user_created_idx on request_logs (user_id, created_at desc nulls first, request_id desc nulls first)`,
  `create index request_logs_created_at_idx on request_logs (created_at)`,
  `create index request_logs_server_errors_idx on request_logs (created_at, public_model, error_code) where status >= 500`,
  ...[0, 1, 2].map(
    (d) =>
      `create table request_logs_p${dayName(DAY0 + d * DAY_MS)} partition of request_logs
         for values from ('${dayText(DAY0 + d * DAY_MS)}') to ('${dayText(DAY0 + (d + 1) * DAY_MS)}')`,
  ),
  `create table request_logs_default partition of request_logs default`,
];

const USERS = Array.from({ length: 1000 }, () => randomUUID());
const KEYS = USERS.map(() => randomUUID());
const MODELS = [
  ["gpt-4o-mini", "gpt-4o-mini-2024-07-18", "openai", "/v1/chat/completions", "openai"],
  ["claude-sonnet-4", "claude-sonnet-4-20250514", "anthropic", "/v1/messages", "anthropic"],
  ["gemini-2.5-flash", "gemini-2.5-flash", "google", "/v1beta/models/gemini-2.5-flash:generateContent", "gemini"],
];

/** A row as the gateway writes one: mostly metered answers, some refusals and failures, over three days in order. */
function realisticRow(i, n) {
  const u = (i * 7919) % USERS.length;
  const [publicModel, upstreamModel, provider, route, protocol] = MODELS[i % MODELS.length];
  const createdAt = new Date(DAY0 + Math.floor((i / n) * 3 * DAY_MS));
  const refused = i % 10 === 0;
  const failed = i % 50 === 7;
  const input = 200 + ((i * 37) % 4000);
  const output = refused ? 0 : 20 + ((i * 13) % 800);
  return {
    requestId: `req_${randomUUID().replaceAll("-", "")}`,
    userId: USERS[u],
    keyId: KEYS[u],
    route,
    clientProtocol: protocol,
    publicModel,
    upstreamModel: refused ? null : upstreamModel,
    provider: refused ? null : provider,
    fallbackPath: failed ? [provider, "azure-east"] : i % 17 === 0 ? ["azure-east"] : [],
    status: refused ? 429 : failed ? 502 : 200,
    errorClass: refused ? "rate_limit" : failed ? "upstream" : null,
    errorCode: refused ? "quota_exceeded" : failed ? "upstream_error" : null,
    inputTokens: refused ? 0 : input,
    outputTokens: output,
    cachedTokens: i % 3 === 0 ? Math.floor(input / 2) : 0,
    quotaCharged: refused || failed ? 0n : BigInt(input * 3 + output * 12),
    costUsd: i % 4 === 0 && !refused ? `0.${String(100000 + ((i * 31) % 900000)).padStart(6, "0")}` : null,
    upstreamCostUsd: refused ? null : `0.0000${(i * 97) % 100000}`,
    usageSource: refused || failed ? "none" : i % 9 === 0 ? "estimated" : "upstream",
    gptImageUsageFallback: null,
    latencyMs: refused ? 0.412 + (i % 7) / 10 : 180 + ((i * 53) % 9000) + 0.125,
    ttfbMs: refused ? null : 90 + ((i * 29) % 700) + 0.5,
    streamed: i % 2 === 0,
    receivedAt: new Date(createdAt.getTime() - 1500),
    createdAt,
  };
}

const COLUMN_LIST = COLUMNS.join(", ");

/**
 * (a): the writer's statement before this benchmark. Its conflict target is left out: on the partitioned table the
 * primary key is (request_id, created_at), and the only unique index is that key either way.
 */
const json = (client, rows) =>
  client.query({ name: "json", text: INSERT_ROWS.replace("on conflict (request_id)", "on conflict"), values: [batchParameter(rows)] });

// COPY's binary format, measured against its text format; not used by the gateway (docs/performance.md says why).
/** A growing buffer of big-endian fields. */
class BinaryOut {
  buf = Buffer.allocUnsafe(1 << 16);
  at = 0;

  room(n) {
    if (this.at + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }
  int16(v) {
    this.room(2);
    this.at = this.buf.writeInt16BE(v, this.at);
  }
  int32(v) {
    this.room(4);
    this.at = this.buf.writeInt32BE(v, this.at);
  }
  int64(v) {
    this.room(8);
    this.at = this.buf.writeBigInt64BE(v, this.at);
  }
  bytes(b) {
    this.room(b.length);
    this.at += b.copy(this.buf, this.at);
  }
  /** A length-prefixed field. */
  field(b) {
    this.int32(b.length);
    this.bytes(b);
  }
  done() {
    return this.buf.subarray(0, this.at);
  }
}

const HEADER = Buffer.from("PGCOPY\n\xff\r\n\0", "latin1");
const TEXT_OID = 25;
// Microseconds between the Unix epoch and PostgreSQL's (2000-01-01).
const PG_EPOCH_MS = 946_684_800_000;
const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/** numeric's binary form: base-10000 digits, the weight of the first, the sign and the digits after the point. */
function numeric(out, text) {
  const m = DECIMAL.exec(text);
  if (!m) throw new Error(`not a plain decimal: ${text}`);
  const [, sign, whole, fraction = ""] = m;
  const intPart = whole.replace(/^0+/, "");
  const intPadded = intPart.padStart(Math.ceil(intPart.length / 4) * 4, "0");
  const fracPadded = fraction.padEnd(Math.ceil(fraction.length / 4) * 4, "0");
  const groups = [];
  for (let i = 0; i < intPadded.length; i += 4) groups.push(Number(intPadded.slice(i, i + 4)));
  for (let i = 0; i < fracPadded.length; i += 4) groups.push(Number(fracPadded.slice(i, i + 4)));
  let weight = intPadded.length / 4 - 1;
  let first = 0;
  while (first < groups.length && groups[first] === 0) {
    first++;
    weight--;
  }
  let last = groups.length;
  while (last > first && groups[last - 1] === 0) last--;
  const digits = groups.slice(first, last);
  out.int32(8 + digits.length * 2);
  out.int16(digits.length);
  out.int16(digits.length === 0 ? 0 : weight);
  out.int16(sign === "-" && digits.length > 0 ? 0x4000 : 0);
  out.int16(fraction.length);
  for (const d of digits) out.int16(d);
}

function binaryValue(out, column, value) {
  if (value === null) return out.int32(-1);
  switch (column) {
    case "user_id":
    case "key_id":
      return out.field(Buffer.from(value.replaceAll("-", ""), "hex"));
    case "fallback_path": {
      const items = value.map((v) => Buffer.from(v, "utf8"));
      const length = items.length === 0 ? 12 : 20 + items.reduce((n, b) => n + 4 + b.length, 0);
      out.int32(length);
      out.int32(items.length === 0 ? 0 : 1);
      out.int32(0);
      out.int32(TEXT_OID);
      if (items.length === 0) return;
      out.int32(items.length);
      out.int32(1);
      for (const b of items) out.field(b);
      return;
    }
    case "status":
      out.int32(2);
      return out.int16(value);
    case "input_tokens":
    case "output_tokens":
    case "cached_tokens":
      out.int32(4);
      return out.int32(value);
    case "quota_charged":
      out.int32(8);
      return out.int64(BigInt(value));
    case "latency_ms":
    case "ttfb_ms":
    case "cost_usd":
    case "upstream_cost_usd":
      return numeric(out, value);
    case "streamed":
      out.int32(1);
      return out.bytes(Buffer.from([value ? 1 : 0]));
    case "received_at":
    case "created_at":
      out.int32(8);
      return out.int64(BigInt(Date.parse(value) - PG_EPOCH_MS) * 1000n);
    default:
      return out.field(Buffer.from(value, "utf8"));
  }
}

/** The rows as COPY's binary format: the header, per row its field count and length-prefixed fields, the trailer. */
function copyBinaryRows(rows) {
  const out = new BinaryOut();
  out.bytes(HEADER);
  out.int32(0);
  out.int32(0);
  for (const row of rows) {
    const r = JSON.parse(row);
    out.int16(COLUMNS.length);
    for (const c of COLUMNS) binaryValue(out, c, r[c]);
  }
  out.int16(-1);
  return out.done();
}

const STAGE = "begin; create temp table if not exists request_logs_stage (like request_logs) on commit delete rows";
const MOVE = `insert into request_logs (${COLUMN_LIST}) select ${COLUMN_LIST} from request_logs_stage on conflict do nothing; commit`;

/** (d): COPY into a temporary table, then one insert … on conflict do nothing from it, in one transaction. */
async function copyStaged(client, rows, binary) {
  await client.query(STAGE);
  const stream = client.query(copyFrom(`copy request_logs_stage (${COLUMN_LIST}) from stdin${binary ? " with (format binary)" : ""}`));
  await pipeline(Readable.from([binary ? copyBinaryRows(rows) : copyTextRows(rows)]), stream);
  await client.query(MOVE);
}

/** (b): insert … values ($1, …), (…) with every value bound; one named statement per batch size. */
function valuesInsert(client, rows) {
  const params = [];
  const tuples = [];
  for (const row of rows) {
    const r = JSON.parse(row);
    const base = params.length;
    tuples.push(`(${COLUMNS.map((_, k) => `$${base + k + 1}`).join(",")})`);
    for (const c of COLUMNS) params.push(r[c]);
  }
  const text = `insert into request_logs (${COLUMN_LIST}) values ${tuples.join(",")} on conflict do nothing`;
  return client.query({ name: `values_${rows.length}`, text, values: params });
}

/** (c): COPY straight into the partitioned table: no ON CONFLICT, so a retried batch would fail (or duplicate). */
async function copyStraight(client, rows, binary) {
  const stream = client.query(copyFrom(`copy request_logs (${COLUMN_LIST}) from stdin${binary ? " with (format binary)" : ""}`));
  await pipeline(Readable.from([binary ? copyBinaryRows(rows) : copyTextRows(rows)]), stream);
}

const METHODS = [
  ["(a) json_to_recordset … on conflict, batch 100", 100, json],
  ["(a) json_to_recordset … on conflict, batch 500 (today)", 500, json],
  ["(a) json_to_recordset … on conflict, batch 2000", 2000, json],
  ["(b) insert … values ($1…), batch 500", 500, valuesInsert],
  ["(b) insert … values ($1…), batch 2000", 2000, valuesInsert],
  ["(c) COPY text straight in, batch 500", 500, (c, rows) => copyStraight(c, rows, false)],
  ["(c) COPY binary straight in, batch 500", 500, (c, rows) => copyStraight(c, rows, true)],
  ["(e) insertBatch: (c) text, and (a) after a unique violation, batch 500", 500, (c, rows) => insertBatch(c, rows)],
  ["(d) COPY text to a temp table + insert … on conflict, batch 500", 500, (c, rows) => copyStaged(c, rows, false)],
  ["(d) COPY text to a temp table + insert … on conflict, batch 2000", 2000, (c, rows) => copyStaged(c, rows, false)],
  ["(d) COPY binary to a temp table + insert … on conflict, batch 500", 500, (c, rows) => copyStaged(c, rows, true)],
];

async function measure(client, backend, rows, size, run) {
  await client.query("truncate request_logs");
  // Warm: the statement prepared, the temp table there, the catalog cached.
  const warm = rows.slice(0, size).map((r) => r.replace(/"request_id":"req_/, '"request_id":"warm_'));
  await run(client, warm);
  await client.query("truncate request_logs");
  const cpu0 = cpuMs(backend);
  const own0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < rows.length; i += size) await run(client, rows.slice(i, i + size));
  const wall = (performance.now() - t0) / 1000;
  const own = process.cpuUsage(own0);
  const cpu = (cpuMs(backend) - cpu0) / 1000;
  const { n } = (await client.query("select count(*)::int as n from request_logs")).rows[0];
  if (n !== rows.length) throw new Error(`wrote ${n} rows, expected ${rows.length}`);
  return { perCore: rows.length / cpu, wall: rows.length / wall, clientUs: (own.user + own.system) / rows.length };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs, digits = 0) =>
  `${median(xs).toFixed(digits).padStart(7)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

async function main(adminUrl) {
  const name = `bench_log_writer_${randomUUID().slice(0, 8)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const client = new pg.Client({ connectionString: url.toString() });
  try {
    await client.connect();
    for (const statement of SCHEMA) await client.query(statement);
    const { version, pid } = (await client.query("select version(), pg_backend_pid() as pid")).rows[0];
    // A fresh row set per round: the same rows for every method of that round.
    const results = new Map(METHODS.map(([label]) => [label, { perCore: [], wall: [], clientUs: [] }]));
    console.log(`${version}\n${ROWS} rows per measurement, ${ROUNDS} rounds; median (min–max):`);
    for (let round = 0; round < ROUNDS; round++) {
      const rows = Array.from({ length: ROWS }, (_, i) => encodeRow(realisticRow(i, ROWS)));
      // Each round starts at a different method, so no method is always first after a truncate or a checkpoint.
      for (let k = 0; k < METHODS.length; k++) {
        const [label, size, run] = METHODS[(k + round) % METHODS.length];
        const r = await measure(client, pid, rows, size, run);
        const acc = results.get(label);
        for (const key of Object.keys(acc)) acc[key].push(r[key]);
      }
      process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`);
    }
    console.log(
      `${"method".padEnd(68)} ${"rows/s per PG core".padStart(22)} ${"rows/s wall".padStart(22)} ${"client µs/row".padStart(22)}`,
    );
    for (const [label, acc] of results) {
      console.log(
        `${label.padEnd(68)} ${fmt(acc.perCore).padStart(22)} ${fmt(acc.wall).padStart(22)} ${fmt(acc.clientUs, 1).padStart(22)}`,
      );
    }
  } finally {
    await client.end().catch(() => {});
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

if (process.env.BENCH_DB === "embedded") {
  const dir = await mkdtemp(path.join(os.tmpdir(), "bench-log-writer-"));
  await chmod(dir, 0o755); // embedded PostgreSQL runs as the postgres user when we are root
  const server = await startEmbeddedPostgres({ dataDir: dir, mode: "own" });
  try {
    await main(server.adminUrl);
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
} else {
  await main(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
}
