import { Command } from "commander";
import type { PublicResellerBalance } from "../src/balances/reseller-accounts.js";
import { action, printJson } from "./output.js";
import { withServices, type CommonOptions } from "./context.js";
import { withCommonOptions } from "./options.js";
import { commandKey, idempotencyKeyOption, printKeyed } from "./idempotency-key.js";

const print = (balance: PublicResellerBalance, opts: CommonOptions) => {
  if (opts.json) return printJson(balance);
  process.stdout.write(
    `reseller balance of ${balance.user_id}: ${balance.available_usd} USD available (credited ${balance.credited_usd}, spent ${balance.spent_usd}, reserved ${balance.reserved_usd})\n`,
  );
};

export function resellerCommand(): Command {
  const reseller = new Command("reseller");

  withCommonOptions(reseller.command("credit").description("add USD to a user's reseller balance"))
    .requiredOption("--user <email|id>", "owner of the reseller keys")
    .requiredOption("--usd <amount>", "amount in USD, exact decimal (e.g. 25 or 0.50; at most 9 decimals)")
    .option("--note <text>", "why, kept with the credit", "")
    .option(...idempotencyKeyOption)
    .action(
      action(async (opts: CommonOptions & { user: string; usd: string; note: string; idempotencyKey?: string }) => {
        const key = commandKey(opts.idempotencyKey, "credit");
        const credited = await withServices(opts, (s) => s.resellers.credit(opts.user, opts.usd, opts.note, key));
        printKeyed(credited, opts, "credit", (balance) => print(balance, opts));
      }),
    );

  withCommonOptions(reseller.command("balance").description("show a user's reseller balance"))
    .requiredOption("--user <email|id>", "owner of the reseller keys")
    .action(
      action(async (opts: CommonOptions & { user: string }) => {
        print(await withServices(opts, (s) => s.resellers.balance(opts.user)), opts);
      }),
    );
  return reseller;
}
