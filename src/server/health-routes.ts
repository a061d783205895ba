import { z } from "zod";
import { withinDeadline } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import { migrationsApplied } from "../db/migrate.js";
import { ours } from "../openapi/operation.js";
import { route } from "./route.js";

/** A readiness probe waits this long for the database (a load balancer's probe times out soon after). */
const PROBE_MS = 1000;

const livenessSchema = z.object({ status: z.literal("ok") });

const readinessSchema = z.object({
  status: z.enum(["ready", "not_ready"]),
  checks: z.object({ database: z.boolean(), migrations: z.boolean() }),
});

const readiness = ours("Readiness", readinessSchema);

export interface HealthDeps {
  pool: Pool;
  /** What the code that retries reports of database faults; the readiness probe reports to it too. */
  health: DatabaseHealth;
}

/** /healthz: the process is up (200 through a database outage: restarting it would not help). */
export const livenessRoute = route<HealthDeps>(
  {
    method: "get",
    path: "/healthz",
    operationId: "getLiveness",
    summary: "Liveness: the process is up (also through a database outage)",
    tag: "Operations",
    access: "public",
    ok: { status: 200, description: "Up.", schema: ours("Liveness", livenessSchema) },
  },
  () => (c) => c.json({ status: "ok" } satisfies z.infer<typeof livenessSchema>),
);

/**
 * /readyz: the database answers within a second and every migration is applied; 503 while it does not, so load
 * balancers drain this process.
 */
export const readinessRoute = route<HealthDeps>(
  {
    method: "get",
    path: "/readyz",
    operationId: "getReadiness",
    summary: "Readiness: the database answers within a second and every migration is applied",
    tag: "Operations",
    access: "public",
    ok: { status: 200, description: "Ready.", schema: readiness },
    otherResponses: [{ status: 503, description: "Not ready: load balancers should drain this process.", schema: readiness }],
  },
  ({ pool, health }) => {
    // Migrations never un-apply while the process runs, so once seen applied the check is skipped.
    let migrated = false;
    return async (c) => {
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
      const answer: z.infer<typeof readinessSchema> = {
        status: ready ? "ready" : "not_ready",
        checks: { database, migrations: migrated },
      };
      return c.json(answer, ready ? 200 : 503);
    };
  },
);
