import { Command, InvalidArgumentError } from "commander";
import { reconcileLog, type LogReconciliation } from "../src/analytics/log-reconcile.js";
import { reconcileLedger, type LedgerMismatch } from "../src/quota/index.js";
import { openAnalyticsDatabase } from "../src/runtime/database.js";
import { adminLogger, loadAdminConfig, openAdminDatabase, type CommonOptions } from "./context.js";
import { withCommonOptions } from "./options.js";
import { action, printJson, printTable } from "./output.js";

// `gateway reconcile` (docs/cli.md): the ledger against its own rows (every account), and the request log against
// the ledger over a time range (docs/billing.md, "Reconciliation"), on the log's own database when it lives apart.
// Exit status 1 when anything differs, so a cron job can alert on it.

interface ReconcileOptions extends CommonOptions {
  from?: Date;
  to?: Date;
}

const DAY_MS = 86_400_000;

function parseTime(value: string): Date {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw new InvalidArgumentError("must be an ISO-8601 time, e.g. 2026-11-29T00:00:00Z");
  return at;
}

const text = (n: bigint | null) => (n === null ? null : n.toString());

function asJson(ledger: LedgerMismatch[], log: LogReconciliation) {
  return {
    ledger: ledger.map((m) => ({
      account_id: m.accountId,
      kind: m.kind,
      period: m.period,
      posted: { account: text(m.posted.account), rows: text(m.posted.rows) },
      pending: { account: text(m.pending.account), rows: text(m.pending.rows) },
      restored: { account: text(m.restored.account), rows: text(m.restored.rows) },
      credits: m.credits && { account: text(m.credits.account), rows: text(m.credits.rows) },
    })),
    log: {
      from: log.from.toISOString(),
      to: log.to.toISOString(),
      holds: log.holds,
      in_outbox: log.inOutbox,
      held_total: text(log.heldTotal),
      logged_total: text(log.loggedTotal),
      differences: log.differences.map((d) => ({ request_id: d.requestId, kind: d.kind, held: text(d.held), logged: text(d.logged) })),
    },
  };
}

export function reconcileCommand(): Command {
  return withCommonOptions(new Command("reconcile"))
    .description("checks the ledger against its rows, and the request log against the ledger's holds over a time range")
    .option("--from <time>", "start of the range (ISO-8601; default: 24 hours ago)", parseTime)
    .option("--to <time>", "end of the range, exclusive (ISO-8601; default: now)", parseTime)
    .action(
      action(async (opts: ReconcileOptions) => {
        const config = loadAdminConfig(opts);
        const logger = adminLogger();
        const to = opts.to ?? new Date();
        const from = opts.from ?? new Date(to.getTime() - DAY_MS);
        const db = await openAdminDatabase(opts, config, logger);
        const analytics = openAnalyticsDatabase({ config, env: process.env, logger });
        if (analytics) process.stderr.write(`gateway: request log: ${analytics.description}\n`);
        try {
          const ledger = await reconcileLedger(db.pool);
          const log = await reconcileLog(db.pool, analytics?.pool ?? db.pool, from, to);
          const result = asJson(ledger, log);
          if (opts.json) printJson(result);
          else {
            process.stdout.write(`ledger: ${ledger.length === 0 ? "every account reconciles" : `${ledger.length} accounts differ`}\n`);
            if (ledger.length > 0) printTable(result.ledger, ["account_id", "kind", "period"]);
            const l = result.log;
            process.stdout.write(
              `request log ${l.from} .. ${l.to}: ${l.holds} holds (${l.in_outbox} still in the outbox), held ${l.held_total}, logged ${l.logged_total}\n`,
            );
            printTable(l.differences, ["request_id", "kind", "held", "logged"]);
          }
          if (ledger.length > 0 || log.differences.length > 0) process.exitCode = 1;
        } finally {
          await analytics?.close();
          await db.close();
        }
      }),
    );
}
