import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { reconcileLedger } from "../../src/quota/index.js";
import { utcDay } from "../../src/time/day.js";
import { gateway, errorLines } from "../helpers/cli.js";
import { useClusterBench } from "../helpers/cluster-bench.js";
import { logIn } from "../helpers/login.js";

// Token transfers with real processes (docs/billing.md, "Token transfers"): the operator sets the policy with
// `gateway transfers policy set` (optimistic revision), users send over two `gateway serve --no-worker` processes
// racing the limits, each process completes what it sent with no graphile-worker anywhere (the complete_transfer
// tasks queued as the backstop stay queued), and `gateway transfers list` shows it.

const DAILY = 1000;
const PASSWORD = "transfers-cluster-pw";

describe("token transfers over two gateway processes", () => {
  const bench = useClusterBench("gateway-e2e-transfers-");

  it("the policy by CLI; racing sends never pass the limits; the sending processes complete them, no worker running; the list shows them", async () => {
    const db = await bench.database();
    const configFile = bench.writeConfig("transfers", {
      providers: { mock: { protocol: "openai", base_url: bench.upstream.baseUrl({}), api_key: "mock-key" } },
      models: { chat: { kind: "chat", upstream: "mock-gpt-small", targets: ["mock"] } },
      plans: { std: { daily_tokens: DAILY, context_limit: 128_000 } },
      default_plan: "std",
    });
    const run = (...args: string[]) => gateway([...args, "--config", configFile], { cwd: bench.workDir, env: { DATABASE_URL: db.url } });

    const shown = await run("transfers", "policy", "show", "--json");
    expect(shown.exitCode, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ revision: 0, enabled: true, send_daily_limit: 100_000 });
    const set = await run(
      "transfers",
      "policy",
      "set",
      "--revision",
      "0",
      "--send-daily-limit",
      "300",
      "--receive-daily-limit",
      "250",
      "--json",
    );
    expect(set.exitCode, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ revision: 1, send_daily_limit: 300, receive_daily_limit: 250, updated_by: "cli" });
    const stale = await run("transfers", "policy", "set", "--revision", "0", "--enabled", "false");
    expect(stale.exitCode).not.toBe(0);
    expect(errorLines(stale.stderr)).toEqual([expect.stringContaining("changed since revision 0")]);
    const bad = await run("transfers", "policy", "set", "--revision", "1", "--enabled", "maybe");
    expect(bad.exitCode).not.toBe(0);
    expect(errorLines(bad.stderr)).toEqual([expect.stringContaining("--enabled must be true or false")]);
    const negative = await run("transfers", "policy", "set", "--revision", "1", "--min-amount", "-5");
    expect(negative.exitCode).not.toBe(0);
    expect(errorLines(negative.stderr)).toEqual(['gateway: --min-amount must be a whole number of 0 or more (digits only), got "-5"']);

    const emails = ["giver@example.test", "taker-a@example.test", "taker-b@example.test"];
    const ids: string[] = [];
    for (const email of emails) {
      const created = await bench.cli(["users", "create", "--email", email, "--password", PASSWORD], configFile, db);
      ids.push(created.id!);
    }
    // The recipients spent most of their day already (a posted hold of its own, so the accounts reconcile).
    for (const id of ids.slice(1)) {
      await db.pool.query(
        `with account as (
           insert into quota_accounts (user_id, kind, period, credits, debits_posted) values ($1, 'daily_allowance', $2, $3, 900) returning id
         )
         insert into quota_holds (account_id, amount, charged, status, request_id, resolved_at) select id, 900, 900, 'posted', 'earlier', now() from account`,
        [id, utcDay(new Date()), DAILY],
      );
    }

    const cluster = bench.cluster({ configFile, databaseUrl: db.url, worker: false });
    const [p0, p1] = await Promise.all([cluster.start(0), cluster.start(1)]);
    const { headers } = await logIn(p0.url, emails[0]!, PASSWORD);
    // 12 sends of 40 at once, over both processes: the send limit (300) lets 7 through.
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        fetch(`${(i % 2 ? p1 : p0).url}/api/v1/user/token-transfers`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify({ recipient: emails[1 + (i % 2)], amount: 40, idempotency_key: `race-${i}` }),
        }),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(7);
    expect(statuses.filter((s) => s !== 202).every((s) => s === 409)).toBe(true);

    // Each process completes what it sent, right after answering 202.
    let pending = 7;
    for (const deadline = Date.now() + 20_000; pending > 0 && Date.now() < deadline; await sleep(100)) {
      const { rows } = await db.pool.query<{ n: number }>("select count(*)::int as n from token_transfers where status = 'pending'");
      pending = rows[0]!.n;
    }
    expect(pending).toBe(0);
    const backstops = await db.pool.query<{ n: number }>(
      "select count(*)::int as n from graphile_worker.jobs where task_identifier = 'complete_transfer'",
    );
    expect(backstops.rows[0]!.n).toBe(7);
    const listed = await run("transfers", "list", "--user", emails[0]!, "--json");
    expect(listed.exitCode, listed.stderr).toBe(0);
    const transfers = (JSON.parse(listed.stdout) as { transfers: { status: string; applied: number; sender_email: string }[] }).transfers;
    expect(transfers).toHaveLength(7);
    expect(transfers.every((t) => t.status === "completed" && t.applied === 40 && t.sender_email === emails[0])).toBe(true);
    const human = await run("transfers", "list");
    expect(human.stdout).toContain(`${emails[0]} -> `);

    await cluster.stop();
    const { rows } = await db.pool.query<{ posted: string }>(
      "select debits_posted::text as posted from quota_account_balances where user_id = $1 and kind = 'daily_allowance'",
      [ids[0]],
    );
    expect(rows[0]!.posted).toBe("280");
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });
});
