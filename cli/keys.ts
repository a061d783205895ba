import { Command, Option } from "commander";
import type { PublicApiKey } from "../src/auth/types.js";
import { action, printJson, printTable } from "./output.js";
import { withServices, type CommonOptions } from "./context.js";
import { withCommonOptions } from "./options.js";

const columns = ["id", "prefix", "kind", "name", "user_email", "models", "pricing_group", "created_at", "last_used_at", "revoked_at"];

const parseModels = (value: string) =>
  value
    .split(",")
    .map((m) => m.trim())
    .filter(Boolean);

export function keysCommand(): Command {
  const keys = new Command("keys");

  withCommonOptions(keys.command("create").description("create an API key (the secret is shown once)"))
    .requiredOption("--user <email|id>", "owner of the key")
    .addOption(new Option("--kind <kind>", "key kind").choices(["inference", "reseller"]).default("inference"))
    .option("--name <name>", "label shown in listings", "")
    .option("--models <ids>", "comma-separated public model IDs the key is limited to", parseModels)
    .option("--group <id>", "pricing group from the config (its multiplier applies to every charge)", "default")
    .action(
      action(
        async (opts: CommonOptions & { user: string; kind: "inference" | "reseller"; name: string; models?: string[]; group: string }) => {
          const created = await withServices(opts, (s) =>
            s.auth.apiKeys.create({
              user: opts.user,
              kind: opts.kind,
              name: opts.name,
              models: opts.models ?? null,
              pricing_group: opts.group,
            }),
          );
          if (opts.json) printJson(created);
          else {
            process.stdout.write(`${created.key}\n`);
            process.stderr.write(`created ${created.kind} key ${created.id} (${created.prefix}…); the secret above is shown only once\n`);
          }
        },
      ),
    );

  withCommonOptions(keys.command("list").description("list API keys"))
    .option("--user <email|id>", "only this user's keys")
    .action(
      action(async (opts: CommonOptions & { user?: string }) => {
        const list = await withServices(opts, async (s) => {
          const keys = await s.auth.apiKeys.list(opts.user ? { user: opts.user } : undefined);
          const emails = new Map((await s.auth.users.list()).map((u) => [u.id, u.email]));
          return keys.map((k) => ({ ...k, user_email: emails.get(k.user_id) ?? null }));
        });
        if (opts.json) printJson(list);
        else printTable(list, columns);
      }),
    );

  withCommonOptions(keys.command("revoke").description("revoke an API key at once, in every gateway process"))
    .argument("<id>", "key id")
    .action(
      action(async (id: string, opts: CommonOptions) => {
        const revoked: PublicApiKey = await withServices(opts, (s) => s.auth.apiKeys.revoke(id));
        if (opts.json) printJson(revoked);
        else process.stdout.write(`revoked key ${revoked.id} (${revoked.prefix}…)\n`);
      }),
    );
  return keys;
}
