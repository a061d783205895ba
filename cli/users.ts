import { Command, Option } from "commander";
import type { AdminUser, UserAccessService } from "../src/auth/types.js";
import { action, printJson, printTable } from "./output.js";
import { withServices, type CommonOptions } from "./context.js";
import { withCommonOptions } from "./options.js";
import { resolvePassword } from "./password.js";

const columns = ["id", "email", "role", "plan", "created_at", "disabled_at"];

interface CreateOptions extends CommonOptions {
  email: string;
  password?: string;
  passwordStdin?: boolean;
  role: "user" | "admin";
  plan?: string;
}

const accessChanges: { name: keyof UserAccessService; command: string; description: string; done: string }[] = [
  {
    name: "disable",
    command: "disable",
    description: "disable a user at once, in every gateway process: no login, their sessions end, their keys are refused",
    done: "disabled",
  },
  {
    name: "enable",
    command: "enable",
    description: "enable a disabled user again (their keys work again; sessions stay ended)",
    done: "enabled",
  },
  {
    name: "remove",
    command: "delete",
    description: "delete a disabled user with everything they own (keys, sessions, quota, reseller balance, support cases)",
    done: "deleted",
  },
];

export function usersCommand(): Command {
  const users = new Command("users");

  withCommonOptions(users.command("create").description("create a user"))
    .requiredOption("--email <email>", "login email (unique, case-insensitive)")
    .option(
      "--password <password>",
      "login password (at least auth.password_min_length characters, 12 by default, not a common one; visible in `ps` and shell history: prefer --password-stdin)",
    )
    .option("--password-stdin", "read the password from stdin (without a password option, a terminal is asked, without echo)")
    .addOption(new Option("--role <role>", "role").choices(["user", "admin"]).default("user"))
    .option("--plan <plan>", "plan id from the config (default: the config's default_plan)")
    .action(
      action(async (opts: CreateOptions) => {
        // Read before the database opens: a prompt must not wait on a started embedded server.
        const password = await resolvePassword({ ...opts, stdin: process.stdin, prompt: process.stderr });
        const user: AdminUser = await withServices(opts, (s) =>
          s.auth.users.create({ email: opts.email, password, role: opts.role, plan: opts.plan }),
        );
        if (opts.json) printJson(user);
        else process.stdout.write(`created ${user.role} ${user.email} (${user.id}) on plan ${user.plan}\n`);
      }),
    );

  withCommonOptions(users.command("list").description("list users")).action(
    action(async (opts: CommonOptions) => {
      const list = await withServices(opts, (s) => s.auth.users.list());
      if (opts.json) printJson(list);
      else printTable(list, columns);
    }),
  );

  withCommonOptions(users.command("set-plan").description("move a user to another configured plan (applies at once)"))
    .requiredOption("--user <email|id>", "the user")
    .requiredOption("--plan <plan>", "plan id from the config")
    .action(
      action(async (opts: CommonOptions & { user: string; plan: string }) => {
        const user = await withServices(opts, (s) => s.auth.users.setPlan(opts.user, opts.plan));
        if (opts.json) printJson(user);
        else
          process.stdout.write(`${user.email} (${user.id}) is on plan ${user.plan}
`);
      }),
    );

  for (const change of accessChanges) {
    withCommonOptions(users.command(change.command).description(change.description))
      .argument("<email|id>", "the user")
      .action(
        action(async (who: string, opts: CommonOptions) => {
          const user = await withServices(opts, (s) => s.auth.userAccess[change.name](who));
          if (opts.json) printJson(user);
          else process.stdout.write(`${change.done} ${user.role} ${user.email} (${user.id})\n`);
        }),
      );
  }
  return users;
}
