import OpenAI, { APIError } from "openai";
import pg from "pg";
import { createPool, type Pool } from "../../src/db/pool.js";
import { startServe, type ServeProcess } from "./cli.js";
import { clientLoops } from "./client-loops.js";

export { anyReserved, readAccounts, startSampler, type AccountSample, type SamplerSummary } from "./ledger-sampler.js";

// The pieces of the crash tests (test/e2e/ledger-crash.test.ts): several real `gateway serve` processes on one
// database, chat clients spreading requests over them round-robin, a sampler of the ledger's accounts on its
// own connection, and the cut of every connection to the database.

/** One `gateway serve` process: `generation` 0 is the first start on `index`'s port, a restart is 1. */
export interface GatewayProcess {
  index: number;
  generation: number;
  port: number;
  url: string;
  serve: ServeProcess;
  /** SIGKILLed by the test (performance.now(), and the wall clock, which the database's shares here). */
  killedAt?: number;
  killedAtWall?: number;
  /** It had exited on its own before the test came to kill it. */
  exitedBeforeKill?: boolean;
}

export interface ClusterOptions {
  cwd: string;
  configFile: string;
  databaseUrl: string;
  worker: boolean;
}

export class GatewayCluster {
  /** The process serving each index now. */
  readonly current: GatewayProcess[] = [];
  /** Every process ever started, for the cleanup. */
  readonly all: GatewayProcess[] = [];

  constructor(private readonly opts: ClusterOptions) {}

  /** Starts `gateway serve` as process `index`; `databaseUrl` replaces the cluster's (a process behind a fault proxy). */
  async start(index: number, port = 0, databaseUrl = this.opts.databaseUrl): Promise<GatewayProcess> {
    const args = ["--config", this.opts.configFile, "--port", String(port), ...(this.opts.worker ? [] : ["--no-worker"])];
    const serve = startServe(args, { cwd: this.opts.cwd, env: { DATABASE_URL: databaseUrl } });
    const generation = this.all.filter((p) => p.index === index).length;
    const entry: GatewayProcess = { index, generation, port, url: "", serve };
    this.all.push(entry);
    const [, url] = await serve.waitFor(/gateway listening on (http:\/\/\S+)/, 60_000);
    entry.url = url!;
    entry.port = Number(new URL(url!).port);
    this.current[index] = entry;
    return entry;
  }

  /** SIGKILL, then wait until the process is gone. */
  async kill(index: number): Promise<GatewayProcess> {
    const victim = this.current[index]!;
    victim.exitedBeforeKill = victim.serve.proc.exitCode !== null || victim.serve.proc.signalCode !== null;
    victim.killedAt = performance.now();
    victim.killedAtWall = Date.now();
    victim.serve.proc.kill("SIGKILL");
    await victim.serve.proc;
    return victim;
  }

  /** SIGTERM every live process (a drain), then their exit codes. */
  async stop(): Promise<{ index: number; generation: number; exitCode: number | undefined; signal: string | undefined }[]> {
    const live = this.all.filter((p) => p.serve.proc.exitCode === null && p.killedAt === undefined);
    for (const p of live) p.serve.proc.kill("SIGTERM");
    return Promise.all(
      live.map(async (p) => {
        const result = await p.serve.proc;
        return { index: p.index, generation: p.generation, exitCode: result.exitCode, signal: result.signal };
      }),
    );
  }

  /**
   * The processes that exited on their own (before the test killed or stopped them): how they ended, the end of
   * their stderr and their last log lines at error level or above.
   */
  exitedOnTheirOwn(): {
    index: number;
    generation: number;
    exitCode: number | null;
    signal: string | null;
    stderr: string;
    errors: string[];
  }[] {
    return this.all
      .filter((p) =>
        p.killedAt === undefined ? p.serve.proc.exitCode !== null || p.serve.proc.signalCode !== null : p.exitedBeforeKill === true,
      )
      .map((p) => ({
        index: p.index,
        generation: p.generation,
        exitCode: p.serve.proc.exitCode,
        signal: p.serve.proc.signalCode,
        stderr: p.serve.stderr().slice(-2_000),
        errors: p.serve
          .stdout()
          .split("\n")
          .filter((line) => /"level":(50|60)/.test(line))
          .slice(-5),
      }));
  }

  /** Kills whatever still runs (the afterAll of a failed test). */
  killAll(): void {
    for (const p of this.all) if (p.serve.proc.exitCode === null && p.serve.proc.signalCode === null) p.serve.proc.kill("SIGKILL");
  }

  /** How many log lines each process wrote per message at `minLevel` or above (pino JSON on stdout; 40 = warn). */
  logSummary(minLevel = 40): { process: string; level: number; msg: string; count: number }[] {
    const counts = new Map<string, { process: string; level: number; msg: string; count: number }>();
    for (const p of this.all) {
      for (const line of p.serve.stdout().split("\n")) {
        if (!line.startsWith("{")) continue;
        let entry: { level?: number; msg?: string; err?: { message?: string } | string };
        try {
          entry = JSON.parse(line) as typeof entry;
        } catch {
          continue; // a line cut by the SIGKILL
        }
        const level = entry.level ?? 0;
        if (level < minLevel) continue;
        const err = typeof entry.err === "string" ? entry.err : entry.err?.message;
        // Retry delays and the like vary: digits are not part of the message's identity.
        const msg = `${entry.msg ?? ""}${err ? ` (${err})` : ""}`.replace(/\d+/g, "N");
        const process = `${p.index}.${p.generation}`;
        const key = `${process} ${level} ${msg}`;
        const seen = counts.get(key) ?? { process, level, msg, count: 0 };
        seen.count++;
        counts.set(key, seen);
      }
    }
    return [...counts.values()];
  }
}

/** What one client request came to, as the client saw it. Times are performance.now(). */
export interface Outcome {
  client: number;
  user: number;
  process: number;
  generation: number;
  /** Chat (JSON or streamed), or an evaluation paid in USD (evaluation-load.ts). */
  kind: "json" | "stream" | "evaluation";
  startedAt: number;
  /** Response headers received (streams) or the whole answer (JSON); undefined: no response. */
  answeredAt?: number;
  endedAt: number;
  /** HTTP status; 0 when no response came (connection refused or cut before the headers). */
  status: number;
  requestId: string | null;
  /** JSON: a 200 with usage. Stream: every event through the finish chunk, the usage chunk and the end. */
  completed: boolean;
  /** The usage the client was shown (prompt + completion tokens), when it saw it. */
  usageTotal: number | null;
  /** The charge the answer named (x-gateway-charge, or the usage chunk's gateway_charge), when it did. */
  charge?: string | null;
  /** What a reseller key's USD balance paid, as the answer named it (x-gateway-charge-usd). */
  chargeUsd?: string | null;
  /** An evaluation's `usage.cost` (USD, a JSON number). */
  costUsd?: number;
  /** An error answer's envelope code and Retry-After header. */
  errorCode?: string | null;
  retryAfter?: string | null;
  error?: string;
}

export interface LoadOptions {
  cluster: GatewayCluster;
  /** One API key per user. */
  keys: string[];
  model: string;
  clients: number;
  /** Which clients stream (the others send JSON requests). */
  streams: (client: number) => boolean;
  maxTokens: number;
  /** Pause between two requests of one client. */
  pauseMs: number;
  /** Which process a client's requests go to; by default, each kind round-robin over the cluster. */
  route?: (client: number) => number;
}

export interface Load {
  outcomes: Outcome[];
  /** Streams of `process` that have answered and not ended yet, and of those how many got their first chunk. */
  streamsInFlight(index: number, generation: number): { open: number; flowing: number };
  /** Ask the clients to stop after their current request; resolves when every one has. */
  stop(): Promise<void>;
}

/** Clients sending chat completions round-robin over the cluster's processes (the official SDK, no retries). */
export function startLoad(opts: LoadOptions): Load {
  const outcomes: Outcome[] = [];
  const open = new Map<Outcome, { flowing: boolean }>();
  const sdks = new Map<string, OpenAI>();
  const sdk = (url: string, key: string) => {
    const id = `${url} ${key}`;
    let client = sdks.get(id);
    if (!client) sdks.set(id, (client = new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0, timeout: 30_000 })));
    return client;
  };
  // Round-robin per kind: streams are few and long, so they take turns among themselves and every process
  // relays its share of them whatever the JSON requests do.
  const turns = { json: 0, stream: 0 };

  async function one(client: number, n: number): Promise<void> {
    const kind = opts.streams(client) ? "stream" : "json";
    const index = opts.route ? opts.route(client) : turns[kind]++ % opts.cluster.current.length;
    const target = opts.cluster.current[index]!;
    const user = client % opts.keys.length;
    const api = sdk(target.url, opts.keys[user]!);
    const out: Outcome = {
      client,
      user,
      process: index,
      generation: target.generation,
      kind,
      startedAt: performance.now(),
      endedAt: 0,
      status: 0,
      requestId: null,
      completed: false,
      usageTotal: null,
    };
    outcomes.push(out);
    const messages = [{ role: "user" as const, content: `Client ${client}, request ${n}: tell me something short.` }];
    try {
      if (kind === "json") {
        const { data, response } = await api.chat.completions
          .create({ model: opts.model, messages, max_tokens: opts.maxTokens })
          .withResponse();
        out.answeredAt = performance.now();
        out.status = response.status;
        out.requestId = response.headers.get("x-request-id");
        out.usageTotal = data.usage ? data.usage.prompt_tokens + data.usage.completion_tokens : null;
        out.charge = response.headers.get("x-gateway-charge");
        out.completed = response.status === 200 && data.usage !== undefined;
      } else {
        const { data, response } = await api.chat.completions
          .create({ model: opts.model, messages, max_tokens: opts.maxTokens, stream: true, stream_options: { include_usage: true } })
          .withResponse();
        out.answeredAt = performance.now();
        out.status = response.status;
        out.requestId = response.headers.get("x-request-id");
        const state = { flowing: false };
        open.set(out, state);
        let finished = false;
        try {
          for await (const chunk of data) {
            state.flowing = true;
            if (chunk.choices[0]?.finish_reason) finished = true;
            if (chunk.usage) {
              out.usageTotal = chunk.usage.prompt_tokens + chunk.usage.completion_tokens;
              const charge = (chunk.usage as { gateway_charge?: number }).gateway_charge;
              out.charge = charge === undefined ? null : String(charge);
            }
          }
        } finally {
          open.delete(out);
        }
        out.completed = finished && out.usageTotal !== null;
      }
    } catch (err) {
      if (err instanceof APIError && err.status !== undefined) {
        out.status = err.status;
        out.answeredAt ??= performance.now();
        out.requestId ??= err.headers?.get("x-request-id") ?? null;
        out.errorCode = typeof err.code === "string" ? err.code : null;
        out.retryAfter = err.headers?.get("retry-after") ?? null;
      } else if (err instanceof APIError) {
        // An in-band error event of a stream that had begun (its status stays the 200 it started with).
        out.errorCode = typeof err.code === "string" ? err.code : null;
      }
      out.error = err instanceof Error ? `${err.constructor.name}: ${err.message}` : String(err);
    } finally {
      out.endedAt = performance.now();
    }
  }

  const loops = clientLoops({ clients: opts.clients, pauseMs: opts.pauseMs }, one);

  return {
    outcomes,
    streamsInFlight(index, generation) {
      let count = 0;
      let flowing = 0;
      for (const [out, state] of open) {
        if (out.process !== index || out.generation !== generation) continue;
        count++;
        if (state.flowing) flowing++;
      }
      return { open: count, flowing };
    },
    stop: loops.stop,
  };
}

/** Terminates every other backend of the database (the gateways', the sampler's), from a connection opened for it. */
export async function cutConnections(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on("error", () => {});
  await client.connect();
  try {
    const { rows } = await client.query<{ cut: boolean }>(
      "select pg_terminate_backend(pid) as cut from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()",
    );
    return rows.filter((r) => r.cut).length;
  } finally {
    await client.end();
  }
}

/** Runs `fn` on a pool of its own, opened for it (the test database's pool had its connections cut). */
export async function withPool<T>(databaseUrl: string, fn: (pool: Pool) => Promise<T>): Promise<T> {
  const pool = createPool(databaseUrl, 2, () => {});
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}
