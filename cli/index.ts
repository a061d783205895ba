import { readFileSync } from "node:fs";
import path from "node:path";
import { Command } from "commander";
import { packageRoot } from "../src/package-root.js";

/**
 * The commands, each loaded only when it runs: a command's module brings the whole gateway behind it (the config
 * schema, the services, the HTTP app), and `gateway --version` or `--help` needs none of it (issue 31). The
 * description of each lives here, once; the others stand in the list by name and description alone, so that
 * help lists them and a misspelt name still gets its suggestion.
 */
const commands: { name: string; description: string; load: () => Promise<Command> }[] = [
  {
    name: "serve",
    description: "run the gateway (HTTP server, background worker, embedded PostgreSQL unless DATABASE_URL is set)",
    load: async () => (await import("./serve.js")).serveCommand(),
  },
  {
    name: "migrate",
    description: "apply database migrations (serve also does this on start)",
    load: async () => (await import("./migrate.js")).migrateCommand(),
  },
  {
    name: "config",
    description: "inspect the configuration",
    load: async () => (await import("./config.js")).configCommand(),
  },
  {
    name: "users",
    description: "manage users",
    load: async () => (await import("./users.js")).usersCommand(),
  },
  {
    name: "keys",
    description: "manage API keys",
    load: async () => (await import("./keys.js")).keysCommand(),
  },
  {
    name: "reseller",
    description: "reseller pay-as-you-go balances (USD)",
    load: async () => (await import("./reseller.js")).resellerCommand(),
  },
  {
    name: "resets",
    description: "reserve resets (weekly and gifted)",
    load: async () => (await import("./resets.js")).resetsCommand(),
  },
  {
    name: "transfers",
    description: "daily token transfers: the policy and the latest operations",
    load: async () => (await import("./transfers.js")).transfersCommand(),
  },
  {
    name: "cases",
    description: "support cases on the database: list, show, takeover, resume, resolve, reopen",
    load: async () => (await import("./cases.js")).casesCommand(),
  },
  {
    name: "reconcile",
    description: "the ledger against its rows, and the request log against the ledger (--from, --to)",
    load: async () => (await import("./reconcile.js")).reconcileCommand(),
  },
  {
    name: "incidents",
    description: "support incidents on the database: list, update, publish, scan",
    load: async () => (await import("./incidents.js")).incidentsCommand(),
  },
  {
    name: "support",
    description: "the support engineer's terminal UI; its subcommands are the non-interactive twins",
    load: async () => (await import("./support.js")).supportCommand(),
  },
  {
    name: "openapi",
    description: "print the OpenAPI 3.1 description of the API (the document GET /openapi.json serves)",
    load: async () => (await import("./openapi.js")).openapiCommand(),
  },
  {
    name: "worker",
    description: "support workers",
    load: async () => (await import("./worker.js")).workerCommand(),
  },
  {
    name: "mock-upstream",
    description: "run the fake upstream provider (deterministic answers, fault injection; see docs/mock-upstream.md)",
    load: async () => (await import("./mock-upstream.js")).mockUpstreamCommand(),
  },
];

// The command this run names: the first word (program options come before it), or the one after `help`.
const words = process.argv.slice(2).filter((arg) => !arg.startsWith("-"));
const named = words[0] === "help" ? words[1] : words[0];

const { version } = JSON.parse(readFileSync(path.join(packageRoot, "package.json"), "utf8")) as { version: string };

const program = new Command("gateway")
  .description("self-hosted model gateway")
  .version(version, "-V, --version", "print the gateway's version")
  // Options belong to the command they follow, so `gateway support queue --url X` reaches queue (support takes --url too).
  .enablePositionalOptions();

// Commander's errors as one line, its suggestion kept: "error: unknown command 'usres' (did you mean users?)".
// Set on every command: addCommand() does not pass output settings down the way command() does.
const oneLine = (message: string) =>
  message
    .trim()
    .split("\n")
    .map((line) => line.trim().replace(/^\(Did you mean/, "(did you mean"))
    .join(" ");
const configureErrors = (cmd: Command): void => {
  cmd.configureOutput({ outputError: (message, write) => write(`${oneLine(message)}\n`) });
  cmd.commands.forEach(configureErrors);
};

// Loaded lazily too: output.js names the error classes of the config, the database and the listener.
const fail = async (err: unknown) => (await import("./output.js")).fail(err);

// A reader that stops early (`gateway openapi | head`) is not an error.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(0);
  void fail(err);
});

async function main(): Promise<void> {
  for (const { name, description, load } of commands)
    program.addCommand((name === named ? await load() : new Command(name)).description(description));
  configureErrors(program);
  await program.parseAsync(process.argv);
}

main().catch(fail);
