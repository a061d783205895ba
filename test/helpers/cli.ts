import { existsSync, readdirSync, readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa, type ResultPromise } from "execa";

export const gatewayBin = path.resolve("bin/gateway");

if (!existsSync(path.resolve("dist/cli/index.js"))) {
  throw new Error("dist/ is missing: run `npm run build` (npm test does it) before the end-to-end tests");
}

/** The environment of a fresh machine: no DATABASE_URL, no config, no inherited gateway settings. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string | undefined> {
  return {
    DATABASE_URL: undefined,
    GATEWAY_CONFIG: undefined,
    GATEWAY_DATA_DIR: undefined,
    GATEWAY_JWT_SECRET: undefined,
    SUPPORT_BOT_TOKEN: undefined,
    ...extra,
  };
}

/** A temp dir the embedded PostgreSQL's system user can reach (mkdtemp makes 0700 dirs). */
export async function tempDir(prefix: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  await chmod(dir, 0o755);
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Runs one gateway command to completion; never throws on a non-zero exit. */
export function gateway(args: string[], opts: { cwd: string; env?: Record<string, string> }) {
  return execa(gatewayBin, args, { cwd: opts.cwd, env: cleanEnv(opts.env), extendEnv: true, reject: false, timeout: 120_000 });
}

/**
 * A command's stderr without its notices: the line every admin command writes first ("gateway: database: …") and
 * the key a money command made for itself ("gateway: idempotency key: …"; docs/cli.md).
 */
export const errorLines = (stderr: string): string[] =>
  stderr
    .trim()
    .split("\n")
    .filter((line) => !line.startsWith("gateway: database: ") && !line.startsWith("gateway: idempotency key: "));

export interface ServeProcess {
  proc: ResultPromise;
  stderr(): string;
  /** What the process wrote to stdout (its structured pino log). */
  stdout(): string;
  /** Resolves with the first match of `pattern` in stderr. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

/** `bin`: another checkout's bin/gateway (a copy under test); this one's by default. */
export function startServe(args: string[], opts: { cwd: string; env?: Record<string, string>; bin?: string }): ServeProcess {
  const proc = execa(opts.bin ?? gatewayBin, ["serve", ...args], {
    cwd: opts.cwd,
    env: cleanEnv(opts.env),
    extendEnv: true,
    reject: false,
    buffer: { stdout: false, stderr: false },
    // A SIGTERM is a drain (server.drain_timeout_ms, 10 s, then the ledger's last syncs): execa's default of a
    // SIGKILL 5 s after it cut drains short on a loaded machine, and a test reading the exit code saw "killed".
    forceKillAfterDelay: 45_000,
  });
  let err = "";
  let out = "";
  proc.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
  proc.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  return {
    proc,
    stderr: () => err,
    stdout: () => out,
    waitFor(pattern, timeoutMs = 90_000) {
      return new Promise((resolve, reject) => {
        const started = Date.now();
        const check = () => {
          const match = err.match(pattern);
          if (match) return resolve(match);
          if (proc.exitCode !== null) return reject(new Error(`gateway exited (${proc.exitCode}): ${err}`));
          if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${pattern}: ${err}`));
          setTimeout(check, 50);
        };
        check();
      });
    },
  };
}

/** A zombie (exited, not yet reaped: orphans wait for whatever adopts them) counts as dead. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}

/**
 * Ends what a test started: `procs` (a serve, a worker) still running are killed, then every process that still
 * mentions the work directory (an embedded PostgreSQL), and the directory goes.
 */
export async function endWork(
  work: { dir: string; remove(): Promise<void> } | undefined,
  ...procs: ({ exitCode: number | null; kill(signal: "SIGKILL"): unknown } | undefined)[]
): Promise<void> {
  for (const proc of procs) if (proc && proc.exitCode === null) proc.kill("SIGKILL");
  if (!work) return;
  for (const pid of processesMentioning(work.dir)) process.kill(pid, "SIGKILL");
  await work.remove();
}

/** PIDs of every process whose command line mentions `needle` (e.g. a data dir). */
export function processesMentioning(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.includes(needle) && isAlive(Number(entry))) pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

export function postmasterPid(dataDir: string): number {
  return Number(readFileSync(path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0]);
}
