import { Command } from "commander";
import { ConfigError, dotted, parseConfig, readConfigDocument } from "../src/config/load.js";
import { unsetVariables } from "../src/config/interpolate.js";
import { maskSecrets } from "../src/config/mask.js";
import type { Config } from "../src/config/schema.js";
import { stringify } from "yaml";
import { action, printJson } from "./output.js";
import { configPathOf, type CommonOptions } from "./context.js";

interface Finding {
  severity: "error";
  path: string;
  message: string;
}

/**
 * Every unset variable is a finding of its own (serve cannot start without them), and the rest of the file is
 * still validated with the provider secrets deferred, so one run shows all that is missing.
 */
function check(file: string, env: NodeJS.ProcessEnv): { config?: Config; findings: Finding[] } {
  const raw = readConfigDocument(file);
  const findings: Finding[] = unsetVariables(raw ?? {}, env).map(({ path, name }) => ({
    severity: "error",
    path: dotted(path),
    message: `environment variable ${name} is not set`,
  }));
  try {
    return { config: parseConfig(raw, file, env, { deferProviderSecrets: true }), findings };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    if (findings.length === 0) throw err;
    // An unset variable outside the providers' secrets stops validation; it is already a finding.
    if (!findings.some((f) => f.path === err.path)) findings.push({ severity: "error", path: err.path, message: err.reason });
    return { findings };
  }
}

export function configCommand(): Command {
  const config = new Command("config").description("inspect the configuration");
  config
    .command("check")
    .description("validate the config file and print it resolved, secrets masked; every unset variable is an error")
    .option("--config <file>", "config file (default: $GATEWAY_CONFIG, else ./gateway.yaml)")
    .option("--json", "print JSON")
    .action(
      action(async (opts: CommonOptions) => {
        const file = configPathOf(opts);
        if (!file) throw new Error("no config file: pass --config FILE, set GATEWAY_CONFIG or create ./gateway.yaml");
        const { config: resolved, findings } = check(file, process.env);
        if (findings.length > 0) {
          for (const f of findings) process.stderr.write(`gateway: ${file}: ${f.severity} at ${f.path}: ${f.message}\n`);
          if (opts.json) printJson({ file, valid: false, findings });
          process.exitCode = 2;
          return;
        }
        const masked = maskSecrets(resolved!);
        if (opts.json) printJson(masked);
        else process.stdout.write(`# ${file}: valid\n${stringify(masked)}`);
      }),
    );
  return config;
}
