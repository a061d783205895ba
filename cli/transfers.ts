import { Command } from "commander";
import type { z } from "zod";
import { errors } from "../src/errors.js";
import { validate } from "../src/server/body.js";
import { policyBody, type adminTransfersAnswer, type PublicPolicy } from "../src/transfers/wire.js";
import { action, printJson } from "./output.js";
import { withServices, type CommonOptions } from "./context.js";
import { withCommonOptions } from "./options.js";

const printPolicy = (p: PublicPolicy, opts: CommonOptions) => {
  if (opts.json) return printJson(p);
  process.stdout.write(
    `transfer policy revision ${p.revision}${p.revision === 0 ? " (the config's defaults)" : ` (by ${p.updated_by} at ${p.updated_at})`}: ` +
      `${p.enabled ? "enabled" : "disabled"}, minimum ${p.min_amount}, per user ${p.send_daily_limit} sent and ${p.receive_daily_limit} received a day, ` +
      `${p.service_daily_limit} a day over everyone\n`,
  );
};

const printList = (list: z.infer<typeof adminTransfersAnswer>, opts: CommonOptions) => {
  if (opts.json) return printJson(list);
  if (list.transfers.length === 0) process.stdout.write("no transfers\n");
  for (const t of list.transfers) {
    const outcome =
      t.status === "completed"
        ? `applied ${t.applied}, returned ${t.returned}`
        : t.status === "refused"
          ? `refused: ${t.reason}`
          : "pending";
    process.stdout.write(`${t.created_at} ${t.id} ${t.sender_email} -> ${t.recipient_email}: ${t.amount} units of ${t.day}, ${outcome}\n`);
  }
};

/** Commander hands options over as text: a number that is not a whole one is refused, never rounded. */
function whole(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw errors.badRequest(`--${name} must be a whole number of 0 or more (digits only), got "${text}"`, name);
  return Number(text);
}

function flag(text: string | undefined): boolean | undefined {
  if (text === undefined) return undefined;
  if (text !== "true" && text !== "false") throw errors.badRequest(`--enabled must be true or false, got "${text}"`, "enabled");
  return text === "true";
}

interface SetOptions extends CommonOptions {
  revision: string;
  enabled?: string;
  minAmount?: string;
  sendDailyLimit?: string;
  receiveDailyLimit?: string;
  serviceDailyLimit?: string;
}

export function transfersCommand(): Command {
  const transfers = new Command("transfers");
  const policy = transfers.command("policy").description("the transfer policy");

  withCommonOptions(policy.command("show").description("show the policy and its revision")).action(
    action(async (opts: CommonOptions) => printPolicy(await withServices(opts, (s) => s.transfers.policy()), opts)),
  );

  withCommonOptions(policy.command("set").description("change the policy, if it is still at --revision (what `show` printed)"))
    .requiredOption("--revision <n>", "the revision the policy was read at; a stale one changes nothing")
    .option("--enabled <true|false>", "whether users may send transfers")
    .option("--min-amount <n>", "the smallest transfer")
    .option("--send-daily-limit <n>", "what one user may send a day")
    .option("--receive-daily-limit <n>", "what one user may receive a day")
    .option("--service-daily-limit <n>", "what every user together may send a day")
    .action(
      action(async (opts: SetOptions) => {
        const revision = whole("revision", opts.revision)!;
        const change = {
          enabled: flag(opts.enabled),
          min_amount: whole("min-amount", opts.minAmount),
          send_daily_limit: whole("send-daily-limit", opts.sendDailyLimit),
          receive_daily_limit: whole("receive-daily-limit", opts.receiveDailyLimit),
          service_daily_limit: whole("service-daily-limit", opts.serviceDailyLimit),
        };
        const saved = await withServices(opts, async (s) => {
          const now = await s.transfers.policy();
          // What is not given keeps its value as of the revision read.
          const body = validate(policyBody, {
            revision,
            enabled: change.enabled ?? now.enabled,
            min_amount: change.min_amount ?? now.min_amount,
            send_daily_limit: change.send_daily_limit ?? now.send_daily_limit,
            receive_daily_limit: change.receive_daily_limit ?? now.receive_daily_limit,
            service_daily_limit: change.service_daily_limit ?? now.service_daily_limit,
          });
          return s.transfers.savePolicy(body, "cli");
        });
        printPolicy(saved, opts);
      }),
    );

  withCommonOptions(transfers.command("list").description("the latest 100 transfers, of everyone or of one user"))
    .option("--user <email|id>", "only this user's, sent or received")
    .action(
      action(async (opts: CommonOptions & { user?: string }) => {
        const list = await withServices(opts, async (s) =>
          s.transfers.latest(opts.user === undefined ? null : (await s.auth.users.get(opts.user)).id),
        );
        printList(list, opts);
      }),
    );
  return transfers;
}
