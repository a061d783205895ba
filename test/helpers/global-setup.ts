import { mkdtemp, chmod, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../src/db/embedded.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** A PostgreSQL URL with the right to CREATE DATABASE; each test file makes its own database there. */
    adminDatabaseUrl: string;
  }
}

// Tests follow the gateway's own rule: DATABASE_URL selects an external PostgreSQL, else an embedded one.
export default async function setup(project: TestProject) {
  const external = process.env.DATABASE_URL;
  if (external) {
    project.provide("adminDatabaseUrl", external);
    return;
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), "gateway-test-pg-"));
  await chmod(dir, 0o755);
  let pg: EmbeddedPostgres;
  try {
    pg = await startEmbeddedPostgres({ dataDir: dir, fastUnsafe: true, mode: "own" });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  project.provide("adminDatabaseUrl", pg.adminUrl);
  return async () => {
    await pg.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
