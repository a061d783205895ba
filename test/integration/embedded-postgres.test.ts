import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { EmbeddedPostgresError } from "../../src/db/embedded-common.js";
import { startEmbeddedPostgres, type EmbeddedPostgres, type EmbeddedPostgresOptions } from "../../src/db/embedded.js";

const roots: string[] = [];
const handles: EmbeddedPostgres[] = [];
const children: ChildProcess[] = [];

// mkdtemp makes 0700, which the postgres system user cannot traverse when the tests run as root.
async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "gw-embedded-pg-"));
  await fs.chmod(dir, 0o755);
  roots.push(dir);
  return dir;
}

async function start(dataDir: string, mode: "own" | "attach-or-start" = "own", extra: Partial<EmbeddedPostgresOptions> = {}) {
  const pgHandle = await startEmbeddedPostgres({ dataDir, mode, fastUnsafe: true, ...extra });
  handles.push(pgHandle);
  return pgHandle;
}

async function startError(dataDir: string, extra: Partial<EmbeddedPostgresOptions> = {}): Promise<Error> {
  const err: unknown = await start(dataDir, "own", extra).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EmbeddedPostgresError);
  expect((err as Error).message).not.toContain("\n");
  return err as Error;
}

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

const postmasterPid = (dataDir: string) => Number(readFileSync(path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0]);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function deadPid(): Promise<number> {
  const child = spawn("true");
  return new Promise((resolve) => child.once("exit", () => resolve(child.pid!)));
}

function postgresUnder(dirs: string[]): number[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .filter((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
        return cmdline.includes("postgres") && dirs.some((d) => cmdline.includes(d));
      } catch {
        return false;
      }
    });
}

afterAll(async () => {
  await Promise.allSettled(handles.map((h) => h.stop()));
  for (const child of children) child.kill("SIGKILL");
  const leftover = postgresUnder(roots);
  for (const pid of leftover) process.kill(pid, "SIGQUIT");
  await sleep(leftover.length ? 1_000 : 0);
  await Promise.all(roots.map((d) => fs.rm(d, { recursive: true, force: true })));
  expect(leftover).toEqual([]);
}, 30_000);

describe("embedded PostgreSQL supervisor", { timeout: 30_000 }, () => {
  let dataDir = "";

  it("initialises, stops cleanly and reuses the cluster on the next start", async () => {
    dataDir = path.join(await tempDir(), "gateway");
    const lines: string[] = [];
    const first = await start(dataDir, "own", { log: (l) => lines.push(l) });
    expect(first.owned).toBe(true);
    // Its Unix socket in the cluster's directory (a statement over it costs the gateway less than over TCP).
    const socketHost = encodeURIComponent(path.join(dataDir, "pg"));
    const escaped = socketHost.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    expect(first.url).toMatch(new RegExp(`^postgres://gateway:[0-9a-f]{48}@${escaped}:${first.port}/gateway$`));
    expect(lines.some((l) => l.startsWith("initialising embedded PostgreSQL in"))).toBe(true);
    expect(await query(first.url, "select 1 as one, inet_server_addr() as addr")).toEqual([{ one: 1, addr: null }]);
    // TCP on loopback stays open, with the same password.
    expect(await query(first.url.replace(socketHost, "127.0.0.1"), "select inet_server_addr()::text as addr")).toEqual([
      { addr: "127.0.0.1/32" },
    ]);
    await query(first.url, "create table kept (v text); insert into kept values ('hello')");
    expect(statSync(path.join(dataDir, "pg-password")).mode & 0o777).toBe(0o600);
    expect(existsSync(path.join(dataDir, "pg.init-tmp"))).toBe(false);

    const pid = postmasterPid(dataDir);
    expect(JSON.parse(readFileSync(path.join(dataDir, "pg-owner.json"), "utf8"))).toMatchObject({ pid: process.pid, mode: "own" });
    await first.stop();
    await first.stop();
    expect(alive(pid)).toBe(false);
    expect(existsSync(path.join(dataDir, "pg-owner.json"))).toBe(false);

    lines.length = 0;
    const second = await start(dataDir, "own", { log: (l) => lines.push(l) });
    expect(lines.some((l) => l.startsWith("initialising"))).toBe(false);
    expect(await query(second.url, "select v from kept")).toEqual([{ v: "hello" }]);
    await second.stop();
  });

  it("attaches to a server owned by a live gateway and leaves it running", async () => {
    const owner = await start(dataDir);
    const attached = await start(dataDir, "attach-or-start");
    expect(attached.owned).toBe(false);
    expect(attached.port).toBe(owner.port);
    expect(attached.url).toBe(owner.url);
    await attached.stop();
    expect(await query(owner.url, "select v from kept")).toEqual([{ v: "hello" }]);
    await owner.stop();
  });

  it("listens on TCP alone when the socket's path would not fit in sun_path", async () => {
    const deep = path.join(await tempDir(), "d".repeat(80));
    const lines: string[] = [];
    const pgHandle = await start(deep, "own", { log: (l) => lines.push(l) });
    expect(pgHandle.url).toMatch(new RegExp(`@127\\.0\\.0\\.1:${pgHandle.port}/gateway$`));
    expect(await query(pgHandle.url, "select 1 as one")).toEqual([{ one: 1 }]);
    expect(lines.some((l) => l.includes("Unix socket"))).toBe(false);
    await pgHandle.stop();
  });

  it("refuses to own a data dir another live gateway owns", async () => {
    const owner = await start(dataDir);
    const otherGateway = spawn("sleep", ["30"]);
    children.push(otherGateway);
    await fs.writeFile(path.join(dataDir, "pg-owner.json"), JSON.stringify({ pid: otherGateway.pid, mode: "own" }));
    const err = await startError(dataDir);
    expect(err.message).toContain(`another gateway process (pid ${otherGateway.pid})`);
    expect(await query(owner.url, "select 1 as one")).toEqual([{ one: 1 }]);
    otherGateway.kill("SIGKILL");
    await owner.stop();
  });

  it("stops an orphaned server left by a crashed gateway and starts afresh", async () => {
    const crashed = await start(dataDir);
    const orphanPid = postmasterPid(dataDir);
    await fs.writeFile(path.join(dataDir, "pg-owner.json"), JSON.stringify({ pid: await deadPid(), mode: "own" }));
    const lines: string[] = [];
    const fresh = await start(dataDir, "own", { log: (l) => lines.push(l) });
    expect(fresh.owned).toBe(true);
    expect(alive(orphanPid)).toBe(false);
    expect(postmasterPid(dataDir)).not.toBe(orphanPid);
    expect(lines.some((l) => l.includes(`orphaned embedded PostgreSQL (pid ${orphanPid})`))).toBe(true);
    expect(await query(fresh.url, "select v from kept")).toEqual([{ v: "hello" }]);
    await crashed.stop();
    expect(existsSync(path.join(dataDir, "pg-owner.json"))).toBe(true);
    await fresh.stop();
    expect(existsSync(path.join(dataDir, "pg-owner.json"))).toBe(false);
  });

  it("ignores a stale postmaster.pid left by a crash", async () => {
    const pidFile = path.join(dataDir, "pg", "postmaster.pid");
    expect(existsSync(pidFile)).toBe(false);
    const dead = await deadPid();
    const stale = [dead, path.join(dataDir, "pg"), Math.floor(Date.now() / 1000), 54329, "", "127.0.0.1", "  5432001  32768", "ready   "];
    await fs.writeFile(pidFile, `${stale.join("\n")}\n`, { mode: 0o600 });
    const pgHandle = await start(dataDir);
    expect(postmasterPid(dataDir)).not.toBe(dead);
    expect(await query(pgHandle.url, "select v from kept")).toEqual([{ v: "hello" }]);
    await pgHandle.stop();
  });

  it("reports a server that exits during start in one line", async () => {
    const versionFile = path.join(dataDir, "pg", "PG_VERSION");
    const version = await fs.readFile(versionFile, "utf8");
    await fs.writeFile(versionFile, "9.6\n");
    try {
      const err = await startError(dataDir);
      expect(err.message).toMatch(/is unusable: database files are incompatible with server/);
      expect(existsSync(path.join(dataDir, "pg-owner.json"))).toBe(false);
    } finally {
      await fs.writeFile(versionFile, version);
    }
  });

  it("reports a fixed port that is already taken", async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const { port } = blocker.address() as net.AddressInfo;
    try {
      const err = await startError(path.join(await tempDir(), "gateway"), { port });
      expect(err.message).toMatch(/port \d+ .*in use/);
      expect(err.message).toContain(String(port));
    } finally {
      blocker.close();
    }
  });

  it("rejects unusable data dirs with one clear line", async () => {
    const file = path.join(await tempDir(), "not-a-dir");
    await fs.writeFile(file, "x");
    expect((await startError(file)).message).toContain(`${file} is not a directory`);

    const junk = await tempDir();
    await fs.mkdir(path.join(junk, "pg"));
    await fs.writeFile(path.join(junk, "pg", "notes.txt"), "not a cluster");
    expect((await startError(junk)).message).toContain("is not a PostgreSQL data directory (no PG_VERSION)");
  });
});
