import { Command } from "commander";
import { casesCommand } from "./cases.js";
import { configCommand } from "./config.js";
import { incidentsCommand } from "./incidents.js";
import { keysCommand } from "./keys.js";
import { migrateCommand } from "./migrate.js";
import { mockUpstreamCommand } from "./mock-upstream.js";
import { openapiCommand } from "./openapi.js";
import { resellerCommand } from "./reseller.js";
import { serveCommand } from "./serve.js";
import { supportCommand } from "./support.js";
import { usersCommand } from "./users.js";
import { workerCommand } from "./worker.js";
import { fail } from "./output.js";

const program = new Command("gateway")
  .description("self-hosted model gateway")
  // Options belong to the command they follow, so `gateway support queue --url X` reaches queue (support takes --url too).
  .enablePositionalOptions()
  .configureOutput({ outputError: (message, write) => write(message.split("\n")[0] + "\n") })
  .addCommand(serveCommand())
  .addCommand(migrateCommand())
  .addCommand(configCommand())
  .addCommand(usersCommand())
  .addCommand(keysCommand())
  .addCommand(resellerCommand())
  .addCommand(casesCommand())
  .addCommand(incidentsCommand())
  .addCommand(supportCommand())
  .addCommand(openapiCommand())
  .addCommand(workerCommand())
  .addCommand(mockUpstreamCommand());

// A reader that stops early (`gateway openapi | head`) is not an error.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(0);
  fail(err);
});

program.parseAsync(process.argv).catch(fail);
