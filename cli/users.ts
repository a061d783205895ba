import { Command, Option } from "commander";
import type { PublicUser } from "../src/auth/types.js";
import { action, printJson, printTable } from "./output.js";
import { withServices, type CommonOptions } from "./context.js";
import { withCommonOptions } from "./options.js";

const columns = ["id", "email", "role", "plan", "created_at"];

export function usersCommand(): Command {
  const users = new Command("users").description("manage users");

  withCommonOptions(users.command("create").description("create a user"))
    .requiredOption("--email <email>", "login email (unique, case-insensitive)")
    .requiredOption("--password <password>", "login password (at least 8 characters)")
    .addOption(new Option("--role <role>", "role").choices(["user", "admin"]).default("user"))
    .option("--plan <plan>", "plan id from the config (default: the config's default_plan)")
    .action(
      action(async (opts: CommonOptions & { email: string; password: string; role: "user" | "admin"; plan?: string }) => {
        const user: PublicUser = await withServices(opts, (s) =>
          s.auth.users.create({ email: opts.email, password: opts.password, role: opts.role, plan: opts.plan }),
        );
        if (opts.json) printJson(user);
        else process.stdout.write(`created ${user.role} ${user.email} (${user.id}) on plan ${user.plan}\n`);
      }),
    );

  withCommonOptions(users.command("list").description("list users")).action(
    action(async (opts: CommonOptions) => {
      const list = await withServices(opts, (s) => s.auth.users.list());
      if (opts.json) printJson(list);
      else printTable(list as unknown as Record<string, unknown>[], columns);
    }),
  );
  return users;
}
