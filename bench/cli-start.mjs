// How long the CLI takes, from the shell's point of view: `gateway --version`, `--help`, `openapi` and an admin
// command on the embedded database (started for the command, as when `serve` is not running). Issue 31's targets:
// `--version` under 0.3 s, admin commands under 1 s on this machine. The median and the slowest of RUNS runs each.
//
//   npm run build && node bench/cli-start.mjs        # RUNS=5 by default
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const gateway = path.join(root, "bin/gateway");
const RUNS = Number(process.env.RUNS ?? 5);

function time(args, cwd) {
  const started = performance.now();
  const run = spawnSync(process.execPath, [gateway, ...args], { cwd, encoding: "utf8", maxBuffer: 64 << 20 });
  const ms = performance.now() - started;
  if (run.status !== 0) throw new Error(`gateway ${args.join(" ")} failed (${run.status}): ${run.stderr.trim()}`);
  return ms;
}

const dir = mkdtempSync(path.join(os.tmpdir(), "gateway-cli-start-"));
chmodSync(dir, 0o755); // embedded PostgreSQL runs as the postgres user when we are root
try {
  time(["users", "list", "--init"], dir); // the database made once, as on an operator's machine
  const cases = [
    ["--version", ["--version"]],
    ["--help", ["--help"]],
    ["openapi", ["openapi"]],
    ["users list (embedded database started for it)", ["users", "list"]],
  ];
  console.log(`gateway CLI, ${RUNS} runs each (ms, median / slowest):`);
  for (const [label, args] of cases) {
    const runs = Array.from({ length: RUNS }, () => time(args, dir)).sort((a, b) => a - b);
    console.log(`  ${label.padEnd(48)} ${runs[Math.floor(RUNS / 2)].toFixed(0).padStart(6)} / ${runs.at(-1).toFixed(0)}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
