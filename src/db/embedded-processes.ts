import { readFileSync } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { EmbeddedPostgresError, HOST, PortInUseError } from "./embedded-common.js";

// The embedded PostgreSQL's processes as the system sees them: whether a recorded postmaster still runs and serves
// our data dir, the owner record of the gateway that started it, stopping it, and whether its port is free.

const readProc = (pid: number, file: string): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return undefined;
  }
};

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const stat = readProc(pid, "stat"); // a zombie still answers kill(0) but is gone
  return stat === undefined || stat[stat.lastIndexOf(")") + 2] !== "Z";
}

// After a reboot or crash the recorded PID may belong to an unrelated process.
export function servesDir(pid: number, pgDir: string): boolean {
  if (process.platform !== "linux") return true;
  const argv = readProc(pid, "cmdline")?.split("\0") ?? [];
  const d = argv.indexOf("-D");
  return path.basename(argv[0] ?? "") === "postgres" && d >= 0 && path.resolve(argv[d + 1] ?? "") === pgDir;
}

export async function livePostmaster(ctx: {
  pgDir: string;
  log: (line: string) => void;
}): Promise<{ pid: number; port: number; socketDir: string } | undefined> {
  const file = path.join(ctx.pgDir, "postmaster.pid");
  const lines = await fs.readFile(file, "utf8").then(
    (t) => t.split("\n"),
    () => undefined,
  );
  if (!lines) return undefined;
  const pid = Number(lines[0]);
  // Line 5 is the first socket directory (empty: TCP only, as servers started by older gateways listen).
  if (pid > 0 && isAlive(pid) && servesDir(pid, ctx.pgDir)) return { pid, port: Number(lines[3]), socketDir: lines[4] ?? "" };
  ctx.log(`removing stale ${file} (PostgreSQL pid ${lines[0]} is not running)`);
  await fs.rm(file, { force: true });
  return undefined;
}

export const readOwner = (file: string) =>
  fs
    .readFile(file, "utf8")
    .then(
      (text) => JSON.parse(text) as { pid: number; postmasterPid?: number },
      () => undefined,
    )
    .catch(() => undefined);

export async function terminate(pid: number, graceMs: number): Promise<void> {
  for (const [signal, ms] of [
    ["SIGINT", graceMs],
    ["SIGQUIT", 10_000],
    ["SIGKILL", 5_000],
  ] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      return;
    }
    for (const until = Date.now() + ms; Date.now() < until; await sleep(100)) if (!isAlive(pid)) return;
  }
}

export const portInUse = (port: number) =>
  new PortInUseError(`embedded PostgreSQL: port ${port} on ${HOST} is already in use; set database.embedded_port to a free port or 0`);

export function assertPortFree(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        err.code === "EADDRINUSE"
          ? portInUse(port)
          : new EmbeddedPostgresError(`embedded PostgreSQL: cannot listen on ${HOST}:${port}: ${err.message}`),
      ),
    );
    probe.listen(port, HOST, () => probe.close(() => resolve()));
  });
}
