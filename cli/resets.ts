import { Command } from "commander";
import type { PublicQuotaResets } from "../src/balances/reserve-resets.js";
import { errors } from "../src/errors.js";
import { action, printJson } from "./output.js";
import { withServices, type CommonOptions } from "./context.js";
import { withCommonOptions } from "./options.js";
import { commandKey, idempotencyKeyOption, printKeyed } from "./idempotency-key.js";

const print = (r: PublicQuotaResets, opts: CommonOptions) => {
  if (opts.json) return printJson(r);
  const gifts = r.gifts.map((g) => `${g.count} until ${g.expires_at ?? "never"}`).join(", ") || "none";
  process.stdout.write(
    `reserve resets of ${r.user_id} (plan ${r.plan}): ${r.weekly_left} of ${r.weekly_allowance} left in week ${r.week} (renews ${r.weekly_renews_at}); gifted ${r.gifted_left} (${gifts}); automatic ${r.auto_reset_enabled ? "on" : "off"}\n`,
  );
  for (const u of r.uses)
    process.stdout.write(`  used ${u.kind} ${u.created_at} (${u.trigger}): restored ${u.restored} units of ${u.day}\n`);
  for (const g of r.grants) {
    process.stdout.write(
      `  granted ${g.count} ${g.created_at} by ${g.granted_by}, expires ${g.expires_at ?? "never"}${g.note ? `: ${g.note}` : ""}\n`,
    );
  }
};

/** Commander hands options over as text: a count that is not a whole number is refused, never rounded. */
function count(text: string): number {
  if (!/^\d+$/.test(text)) throw errors.badRequest(`--count must be a whole number from 1 to 1000, got "${text}"`, "count");
  return Number(text);
}

export function resetsCommand(): Command {
  const resets = new Command("resets");

  withCommonOptions(resets.command("grant").description("give a user gifted reserve resets"))
    .requiredOption("--user <email|id>", "the user")
    .requiredOption("--count <n>", "how many resets (1 to 1000)")
    .option("--expires <date>", "YYYY-MM-DD (valid through that UTC day) or an ISO 8601 instant; default: never")
    .option("--note <text>", "why, kept with the grant", "")
    .option(...idempotencyKeyOption)
    .action(
      action(async (opts: CommonOptions & { user: string; count: string; expires?: string; note: string; idempotencyKey?: string }) => {
        const n = count(opts.count);
        const key = commandKey(opts.idempotencyKey, "grant");
        const granted = await withServices(opts, (s) =>
          s.resets.grant(opts.user, { count: n, expires: opts.expires, note: opts.note }, "cli", key),
        );
        printKeyed(granted, opts, "grant", (state) => print(state, opts));
      }),
    );

  withCommonOptions(resets.command("show").description("show a user's reserve resets, grants and uses"))
    .requiredOption("--user <email|id>", "the user")
    .action(
      action(async (opts: CommonOptions & { user: string }) => {
        print(await withServices(opts, (s) => s.resets.state(opts.user)), opts);
      }),
    );
  return resets;
}
