import { Hono } from "hono";
import { withinDeadline } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import { migrationsApplied } from "../db/migrate.js";
import type { AppEnv } from "./context.js";

/** A readiness probe waits this long for the database (a load balancer's probe times out soon after). */
const PROBE_MS = 1000;

/**
 * /healthz: the process is up (200 through a database outage: restarting it would not help). /readyz: the
 * database answers within a second and every migration is applied; 503 while it does not, so load balancers
 * drain this process.
 */
export function healthRoutes(pool: Pool, health: DatabaseHealth) {
  // Migrations never un-apply while the process runs, so once seen applied the check is skipped.
  let migrated = false;
  return new Hono<AppEnv>()
    .get("/healthz", (c) => c.json({ status: "ok" }))
    .get("/readyz", async (c) => {
      let database = false;
      try {
        await withinDeadline(PROBE_MS, () => pool.query("select 1"));
        database = true;
        health.ok();
        migrated ||= await migrationsApplied(pool);
      } catch (err) {
        if (!database) health.failed(err, "readiness probe");
      }
      const ready = database && migrated;
      return c.json({ status: ready ? "ready" : "not_ready", checks: { database, migrations: migrated } }, ready ? 200 : 503);
    });
}
