// Child processes of the benchmark and what is measured about them from outside (/proc).
// Every server runs in its own process so the numbers include the real cost of a hop between processes and
// no event loop is shared; each one is registered here so that any exit path (error, Ctrl-C) stops all of
// them, the gateway's embedded PostgreSQL included.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";

const children = new Set();
const tempDirs = new Set();
/** postmaster.pid files of embedded PostgreSQL servers, for when their gateway had to be killed. */
const postmasterFiles = new Set();

const tailOf = (buf) => buf.slice(-4000);

/**
 * Spawns `node args…` in its own process group (a terminal Ctrl-C reaches only the orchestrator, which then
 * stops each child exactly once: a second SIGTERM would make the gateway cut its drain short) and resolves
 * with the first match of `ready` in its output.
 */
export function startProcess(name, args, { ready, timeoutMs = 30_000, env = process.env } = {}) {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], detached: true, env });
  const proc = { name, child, pid: child.pid, out: "", exited: false, exitCode: null };
  children.add(proc);
  const exited = new Promise((resolve) =>
    child.once("exit", (code, signal) => {
      proc.exited = true;
      proc.exitCode = code ?? signal;
      children.delete(proc);
      resolve();
    }),
  );
  proc.exitedPromise = exited;
  if (!ready) return Promise.resolve({ ...proc, match: null });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: not ready after ${timeoutMs} ms\n${tailOf(proc.out)}`)), timeoutMs);
    const onData = (chunk) => {
      proc.out = tailOf(proc.out + chunk);
      const match = ready.exec(proc.out);
      if (match) {
        clearTimeout(timer);
        child.stdout.off("data", onData);
        child.stderr.off("data", onData);
        // Keep draining the pipes: a child blocked on a full pipe would stall mid-benchmark.
        child.stdout.on("data", (c) => (proc.out = tailOf(proc.out + c)));
        child.stderr.on("data", (c) => (proc.out = tailOf(proc.out + c)));
        resolve(Object.assign(proc, { match }));
      }
    };
    child.stdout.setEncoding("utf8").on("data", onData);
    child.stderr.setEncoding("utf8").on("data", onData);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${proc.exitCode}) before it was ready:\n${tailOf(proc.out).trim()}`));
    });
  });
}

/** Runs `node args…` to completion and returns its stdout; rejects with stderr on a non-zero exit. */
export async function runNode(name, args, { env = process.env } = {}) {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], detached: true, env });
  const proc = { name, child, pid: child.pid };
  children.add(proc);
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (c) => (out += c));
  child.stderr.setEncoding("utf8").on("data", (c) => (err = tailOf(err + c)));
  const code = await new Promise((resolve) => child.once("exit", (c, s) => resolve(c ?? s)));
  children.delete(proc);
  if (code !== 0) throw new Error(`${name} failed (${code}): ${err.trim() || out.trim()}`);
  return out;
}

export const registerTempDir = (dir) => tempDirs.add(dir);
export const registerPostmaster = (file) => postmasterFiles.add(file);

function signal(pid, sig) {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

async function stop(proc, graceMs) {
  if (!signal(proc.pid, "SIGTERM")) return;
  const done = proc.exitedPromise ?? new Promise((resolve) => proc.child.once("exit", resolve));
  const killed = await Promise.race([done.then(() => false), new Promise((r) => setTimeout(() => r(true), graceMs))]);
  if (killed) signal(proc.pid, "SIGKILL");
}

/**
 * Runs a benchmark's `main`: a signal stops every child first (then exit 130), an error is one line (exit 1), and
 * every child, the embedded PostgreSQL and the temp dirs are gone at the end either way.
 */
export async function runBenchmark(name, main) {
  let interrupted = false;
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.once(sig, () => {
      interrupted = true;
      process.stderr.write(`\n${sig}: stopping every benchmark process…\n`);
      void cleanup().then(() => process.exit(130));
    });
  }
  try {
    await main();
  } catch (err) {
    process.exitCode = 1;
    if (!interrupted) process.stderr.write(`${name} failed: ${err.message}\n`);
  } finally {
    await cleanup();
  }
}

let cleaning;
/** Stops every child (load generators first, the gateway last since it stops PostgreSQL) and removes temp dirs. */
export function cleanup() {
  cleaning ??= (async () => {
    const all = [...children].reverse();
    await Promise.all(all.map((p) => stop(p, p.name === "gateway" ? 30_000 : 5_000)));
    for (const file of postmasterFiles) {
      const pid = Number(readText(file)?.split("\n")[0]);
      if (pid > 0 && signal(pid, "SIGTERM")) await new Promise((r) => setTimeout(r, 2_000));
    }
    for (const dir of tempDirs) await rm(dir, { recursive: true, force: true }).catch(() => {});
  })();
  return cleaning;
}

function readText(file) {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** Resident set size in MB (VmRSS), or undefined once the process is gone. */
export function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readText(`/proc/${pid}/status`) ?? "");
  return m ? Number(m[1]) / 1024 : undefined;
}

/** CPU ticks (user + system) and parent of every process. */
function allTicks() {
  const parent = new Map();
  const ticks = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readText(`/proc/${entry}/stat`);
    if (!stat) continue;
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    parent.set(Number(entry), Number(f[1]));
    ticks.set(Number(entry), Number(f[11]) + Number(f[12]));
  }
  return { parent, ticks };
}

/** Ticks of `root` and of its descendants, each keyed by pid. */
function treeOf({ parent, ticks }, root) {
  const own = new Map();
  const below = new Map();
  for (const [pid, t] of ticks) {
    for (let p = pid; p > 1; p = parent.get(p) ?? 0) {
      if (p === root) {
        (pid === root ? own : below).set(pid, t);
        break;
      }
    }
  }
  return { own, below };
}

const delta = (now, before) => {
  let sum = 0;
  for (const [pid, t] of now) sum += t - (before.get(pid) ?? 0);
  return sum;
};

function machineBusyTicks() {
  const f = readText("/proc/stat").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  return f.reduce((a, b) => a + b, 0) - f[3] - f[4]; // minus idle and iowait
}

/**
 * The CPU used by `pid` (its own process) and by its descendants (PostgreSQL under the gateway), in ms, each call
 * the total so far. A descendant that exited keeps the CPU it was last seen with: PostgreSQL backends end when the
 * pool closes idle connections, and their CPU would otherwise leave the sum (sample often enough to see them).
 */
export function cpuTracker(pid) {
  const seen = new Map();
  return () => {
    const { own, below } = treeOf(allTicks(), pid);
    for (const [child, ticks] of below) seen.set(child, ticks);
    return { own: delta(own, new Map()) * 10, children: delta(seen, new Map()) * 10 };
  };
}

/**
 * Samples, every `everyMs`, the RSS of the given pids and how much CPU the rest of the machine used (other
 * sessions' builds and tests share these 2 cores; a run with a busy neighbour is marked, not trusted). The
 * stop function also returns each pid's CPU over the run (its own process, and its descendants: PostgreSQL
 * under the gateway), in ms: CPU per request holds up on a noisy machine where latency tails do not.
 */
export function startSampler(pids, everyMs = 250) {
  const maxRss = Object.fromEntries(Object.keys(pids).map((k) => [k, 0]));
  const tickMs = 10; // USER_HZ is 100 on Linux
  const first = allTicks();
  let prev = treeOf(first, process.pid);
  let prevBusy = machineBusyTicks();
  let otherTicks = 0;
  const started = performance.now();
  const timer = setInterval(() => {
    for (const [name, pid] of Object.entries(pids)) maxRss[name] = Math.max(maxRss[name], rssMb(pid) ?? 0);
    const now = treeOf(allTicks(), process.pid);
    const busy = machineBusyTicks();
    const mine = delta(now.own, prev.own) + delta(now.below, prev.below);
    otherTicks += Math.max(0, busy - prevBusy - mine);
    prev = now;
    prevBusy = busy;
  }, everyMs);
  return () => {
    clearInterval(timer);
    const last = allTicks();
    const cpuMs = {};
    for (const [name, pid] of Object.entries(pids)) {
      const a = treeOf(first, pid);
      const b = treeOf(last, pid);
      cpuMs[name] = { own: delta(b.own, a.own) * tickMs, children: delta(b.below, a.below) * tickMs };
    }
    const seconds = (performance.now() - started) / 1000;
    return { maxRss, cpuMs, otherCpuPercent: Math.round(((otherTicks * tickMs) / 1000 / seconds) * 100) };
  };
}
