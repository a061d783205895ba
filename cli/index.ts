import { readFileSync } from "node:fs";
import path from "node:path";
import { Command } from "commander";
import { packageRoot } from "../src/package-root.js";
import { casesCommand } from "./cases.js";
import { configCommand } from "./config.js";
import { incidentsCommand } from "./incidents.js";
import { keysCommand } from "./keys.js";
import { migrateCommand } from "./migrate.js";
import { mockUpstreamCommand } from "./mock-upstream.js";
import { openapiCommand } from "./openapi.js";
import { resellerCommand } from "./reseller.js";
import { resetsCommand } from "./resets.js";
import { transfersCommand } from "./transfers.js";
import { serveCommand } from "./serve.js";
import { supportCommand } from "./support.js";
import { usersCommand } from "./users.js";
import { workerCommand } from "./worker.js";
import { fail } from "./output.js";

const { version } = JSON.parse(readFileSync(path.join(packageRoot, "package.json"), "utf8")) as { version: string };

const program = new Command("gateway")
  .description("self-hosted model gateway")
  .version(version, "-V, --version", "print the gateway's version")
  // Options belong to the command they follow, so `gateway support queue --url X` reaches queue (support takes --url too).
  .enablePositionalOptions()
  .addCommand(serveCommand())
  .addCommand(migrateCommand())
  .addCommand(configCommand())
  .addCommand(usersCommand())
  .addCommand(keysCommand())
  .addCommand(resellerCommand())
  .addCommand(resetsCommand())
  .addCommand(transfersCommand())
  .addCommand(casesCommand())
  .addCommand(incidentsCommand())
  .addCommand(supportCommand())
  .addCommand(openapiCommand())
  .addCommand(workerCommand())
  .addCommand(mockUpstreamCommand());

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
configureErrors(program);

// A reader that stops early (`gateway openapi | head`) is not an error.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(0);
  fail(err);
});

program.parseAsync(process.argv).catch(fail);
