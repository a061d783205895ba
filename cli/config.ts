import { Command } from "commander";
import { loadConfigFile } from "../src/config/load.js";
import { maskSecrets } from "../src/config/mask.js";
import { stringify } from "yaml";
import { action, printJson } from "./output.js";
import { configPathOf, type CommonOptions } from "./context.js";

export function configCommand(): Command {
  const config = new Command("config").description("inspect the configuration");
  config
    .command("check")
    .description("validate the config file and print it resolved, secrets masked")
    .option("--config <file>", "config file (default: $GATEWAY_CONFIG, else ./gateway.yaml)")
    .option("--json", "print JSON")
    .action(
      action(async (opts: CommonOptions) => {
        const file = configPathOf(opts);
        if (!file) throw new Error("no config file: pass --config FILE, set GATEWAY_CONFIG or create ./gateway.yaml");
        const masked = maskSecrets(loadConfigFile(file));
        if (opts.json) printJson(masked);
        else process.stdout.write(`# ${file}: valid\n${stringify(masked)}`);
      }),
    );
  return config;
}
