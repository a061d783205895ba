import { quickAddJob, runOnce } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { crontab, taskList, type JobDeps } from "../../src/jobs/tasks.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";

describe("background jobs", () => {
  let gw: TestGateway;
  let deps: JobDeps;
  beforeAll(async () => {
    gw = await startTestGateway();
    deps = {
      sessions: gw.services.auth.sessions,
      ledger: gw.services.ledger,
      pool: gw.db.pool,
      retention: gw.services.config.retention,
      partitionsAheadDays: gw.services.config.analytics.partitions_ahead_days,
      transfers: gw.services.transfers,
    };
  });
  afterAll(() => gw.close());

  it("prune_auth deletes expired and revoked sessions and keeps live ones; running it twice is harmless", async () => {
    const { users, sessions } = gw.services.auth;
    await users.create({ email: "jobs@example.test", password: "password-123" });
    const live = await sessions.login("jobs@example.test", "password-123");
    const revoked = await sessions.login("jobs@example.test", "password-123");
    const expired = await sessions.login("jobs@example.test", "password-123");
    const revokedSid = (await sessions.verify(revoked.token))!.sessionId;
    await sessions.logout(revokedSid);
    const expiredSid = (await sessions.verify(expired.token))!.sessionId;
    await gw.db.pool.query("update sessions set expires_at = now() - interval '1 minute' where id = $1", [expiredSid]);
    // Revocation is pruned once it is in the past, like expiry.
    await gw.db.pool.query("update sessions set revoked_at = now() - interval '1 minute' where id = $1", [revokedSid]);

    const run = async () => {
      await quickAddJob({ pgPool: gw.db.pool }, "prune_auth", {});
      await runOnce({ pgPool: gw.db.pool, taskList: taskList(deps) });
    };
    await run();
    const { rows } = await gw.db.pool.query<{ id: string }>("select id from sessions");
    const liveSid = (await sessions.verify(live.token))!.sessionId;
    expect(rows.map((r) => r.id)).toEqual([liveSid]);
    await run();
    expect((await gw.db.pool.query("select count(*)::int as n from sessions")).rows[0].n).toBe(1);
    // graphile-worker completes a job without awaiting it, so runOnce may return just before the delete lands.
    const jobsLeft = async () => (await gw.db.pool.query("select count(*)::int as n from graphile_worker.jobs")).rows[0].n;
    await expect.poll(jobsLeft).toBe(0);
  });

  it("schedules every task it names", () => {
    const scheduled = crontab.split("\n").map((line) => line.split(/\s+/)[5]);
    expect(scheduled.every((task) => task! in taskList(deps))).toBe(true);
  });
});
