// What one answer's commit costs PostgreSQL, piece by piece (docs/performance.md, "What a commit per answer
// costs"). At a few hundred requests a second answers rarely overlap, so each pays the lease's post-only sync
// alone: this measures that statement and its parts, one at a time, on one connection, as the CPU of that
// connection's backend (/proc) per statement, and what the pg client costs this Node process for it.
//
//   npm run bench:statements          # or, after a build: node bench/statement-cost.mjs (N=3000 per case)
//
// A gateway (embedded PostgreSQL) serves 200 chat requests first, so that the tables hold a lease, an account,
// holds and request-log rows shaped as in production; then it sits idle while the statements run on a
// connection of their own. The sync runs on that lease as the gateway's would (its seq advanced each time).
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { insertRows, rewriteRows } from "../dist/src/analytics/row-json.js";
import { leaseSync } from "../dist/src/quota/lease-sql.js";
import { benchDir, startGateway, startMock } from "./gateway-server.mjs";
import { runPacedProcess } from "./paced-load.mjs";
import { runBenchmark } from "./processes.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const N = Number(process.env.N ?? 3000);
const MOCK_KEY = "bench-mock-key-statements";

/** CPU of process `pid` so far, in ms (USER_HZ 100). */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function connect(pgDir) {
  const password = readFileSync(path.join(pgDir, "pg-password"), "utf8").trim();
  // postmaster.pid: line 4 the port, line 5 the socket directory (the gateway's own way in).
  const pid = readFileSync(path.join(pgDir, "pg", "postmaster.pid"), "utf8").split("\n");
  const client = new pg.Client({ host: pid[4], port: Number(pid[3]), user: "gateway", password, database: "gateway" });
  await client.connect();
  // The server goes when the run ends, whichever way it ends: that is not this client's error to report.
  client.on("error", () => {});
  return client;
}

async function main() {
  const dataDir = await benchDir("gateway-statements-");
  const mock = await startMock(MOCK_KEY);
  const gw = await startGateway(path.join(dataDir, "gateway"), mock.match[1], path.join(root, "bin/gateway"), { mockKey: MOCK_KEY });
  const body = JSON.stringify({ model: gw.model, messages: [{ role: "user", content: "Say hello" }], max_tokens: 16 });
  await runPacedProcess({ url: `${gw.url}/v1/chat/completions`, key: gw.key, body, rate: 100, duration: 2, warmup: 0 });

  const client = await connect(path.join(dataDir, "gateway", "db"));
  const backend = (await client.query("select pg_backend_pid() as pid")).rows[0].pid;
  const lease = (await client.query("select id, seq, account_id, instance_id from quota_leases order by seq desc limit 1")).rows[0];
  const row = JSON.parse((await client.query("select row_to_json(r)::text as j from request_logs r limit 1")).rows[0].j);
  const sync = leaseSync({ insert: insertRows, rewrite: rewriteRows });
  let seq = lease.seq;
  const record = (requestId) => JSON.stringify(Object.assign({}, row, { request_id: requestId }));
  const resolution = () => {
    const requestId = `bench-${randomUUID()}`;
    return { holdId: randomUUID(), requestId, amount: 5n, charged: 5n, reservedAt: new Date(), record: record(requestId) };
  };
  // `answers` settlements sharing one sync, as concurrent answers share a commit under load (docs/scaling.md).
  const postOnly = (answers = 1) => {
    const resolutions = Array.from({ length: answers }, resolution);
    return sync(client, {
      leaseId: lease.id,
      seq: ++seq,
      instanceId: lease.instance_id,
      base: null,
      baseRevision: 0n,
      // Nothing taken out of the lease: it may still be open, and its units must not run out over N statements.
      post: 5n * BigInt(answers),
      take: 0n,
      giveBack: 0n,
      need: 0n,
      headroom: 0n,
      close: false,
      touch: false,
      postOnly: true,
      resolutions,
    });
  };
  const cases = [
    ["a round trip (select 1)", () => client.query({ name: "s", text: "select 1" })],
    [
      "+ a commit (one HOT update of the account)",
      () => client.query({ name: "u", text: "update quota_accounts set updated_at = now() where id = $1", values: [lease.account_id] }),
    ],
    [
      "+ a commit (one hold inserted)",
      () =>
        client.query({
          name: "h",
          text: `insert into quota_holds (id, account_id, lease_id, amount, charged, status, request_id, instance_id, created_at, resolved_at)
                 values ($1, $2, $3, 10, 5, 'posted', $4, $5, now(), now())`,
          values: [randomUUID(), lease.account_id, lease.id, `bench-${randomUUID()}`, lease.instance_id],
        }),
    ],
    [
      "+ a commit (one request-log row, the journal's INSERT)",
      () => client.query({ name: "l", text: insertRows("$1::json"), values: [`[${record(`bench-${randomUUID()}`)}]`] }),
    ],
    ["the post-only sync of one answer (all of the above in one statement)", () => postOnly()],
    ["the post-only sync of 8 answers (one statement: a group commit)", () => postOnly(8)],
    ["the post-only sync of 32 answers (one statement: a group commit)", () => postOnly(32)],
    // For reference only, never configured: the same without waiting for the WAL flush, i.e. what the flush costs.
    ["the same with synchronous_commit off (what the WAL flush costs)", () => postOnly(), "set synchronous_commit = off"],
  ];
  console.log(
    `PostgreSQL backend CPU per statement, ${N} statements each on one connection (beside it: wall time, and the CPU of this Node process's pg client):`,
  );
  for (const [label, run, setting] of cases) {
    if (setting) await client.query(setting);
    for (let i = 0; i < 200; i++) await run();
    const cpu0 = cpuMs(backend);
    const own0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await run();
    const cpu = ((cpuMs(backend) - cpu0) * 1000) / N;
    const wall = ((performance.now() - t0) * 1000) / N;
    const own = process.cpuUsage(own0);
    const clientUs = (own.user + own.system) / N;
    console.log(
      `  ${label.padEnd(72)} ${cpu.toFixed(0).padStart(5)} µs CPU  ${wall.toFixed(0).padStart(5)} µs wall  ${clientUs.toFixed(0).padStart(4)} µs client CPU`,
    );
  }
  await client.end();
}

await runBenchmark("statement-cost", main);
