import { Hono } from "hono";
import type { Pool } from "../db/pool.js";
import { migrationsApplied } from "../db/migrate.js";
import type { AppEnv } from "./context.js";

/** /healthz: the process is up. /readyz: the database answers and every migration is applied. */
export function healthRoutes(pool: Pool) {
  // Migrations never un-apply while the process runs, so once seen applied the check is skipped.
  let migrated = false;
  return new Hono<AppEnv>()
    .get("/healthz", (c) => c.json({ status: "ok" }))
    .get("/readyz", async (c) => {
      let database = false;
      try {
        await pool.query("select 1");
        database = true;
        migrated ||= await migrationsApplied(pool);
      } catch {
        database = false;
      }
      const ready = database && migrated;
      return c.json({ status: ready ? "ready" : "not_ready", checks: { database, migrations: migrated } }, ready ? 200 : 503);
    });
}
