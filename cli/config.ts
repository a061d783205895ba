import { Command } from "commander";
import { configFindings, type ConfigFinding } from "../src/config/findings.js";
import { unsetVariables } from "../src/config/interpolate.js";
import { ConfigError, dotted, parseConfig, readConfigDocument } from "../src/config/load.js";
import { maskSecrets } from "../src/config/mask.js";
import type { Config } from "../src/config/schema.js";
import { stringify } from "yaml";
import { action, printJson } from "./output.js";
import { configPathOf, type CommonOptions } from "./context.js";

interface ConfigReport {
  /** Null when the file did not load or a variable is unset (the findings then say why). */
  config: Config | null;
  findings: ConfigFinding[];
}

/**
 * Every unset variable is a finding of its own (serve cannot start without them), and the rest of the file is
 * still validated with the provider secrets deferred, so one run shows all that is missing and all that is wrong.
 */
function checkFile(file: string, env: NodeJS.ProcessEnv): ConfigReport {
  const findings: ConfigFinding[] = [];
  try {
    const raw = readConfigDocument(file);
    for (const { path, name } of unsetVariables(raw, env)) {
      findings.push({ level: "error", path: dotted(path), message: `environment variable ${name} is not set` });
    }
    const config = parseConfig(raw, file, env, { deferProviderSecrets: true });
    findings.push(...configFindings(config));
    return { config: findings.some((f) => f.level === "error") ? null : config, findings };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // An unset variable outside the providers' secrets stops validation; it is already a finding.
    for (const { path, reason } of err.problems) {
      if (!findings.some((f) => f.path === path)) findings.push({ level: "error", path, message: reason });
    }
    return { config: null, findings };
  }
}

/** The same words as an invalid config's one line (`gateway: invalid config FILE at PATH: …`), per finding. */
const findingLine = (file: string, f: ConfigFinding) =>
  `${f.level === "error" ? "invalid config" : "warning: config"} ${file}${f.path ? ` at ${f.path}` : ""}: ${f.message}`;

export function configCommand(): Command {
  const config = new Command("config");
  config
    .command("check")
    .description("validate the config file, list its errors (every unset variable too) and warnings, and print it resolved, secrets masked")
    .option("--config <file>", "config file (default: $GATEWAY_CONFIG, else ./gateway.yaml)")
    .option("--json", "print JSON: {file, valid, findings: [{level, path, message}], config}")
    .action(
      action(async (opts: CommonOptions) => {
        const file = configPathOf(opts);
        if (!file) throw new Error("no config file: pass --config FILE, set GATEWAY_CONFIG or create ./gateway.yaml");
        const { config: loaded, findings } = checkFile(file, process.env);
        const valid = findings.every((f) => f.level !== "error");
        // Exit 2 as an invalid config does everywhere, after the whole list.
        if (!valid) process.exitCode = 2;
        const masked = valid && loaded ? maskSecrets(loaded) : null;
        if (opts.json) return printJson({ file, valid, findings, config: masked });
        if (!masked) {
          for (const f of findings) process.stderr.write(`gateway: ${findingLine(file, f)}\n`);
          return;
        }
        // Comments, so that stdout stays the resolved config in YAML.
        const notes = findings.map((f) => `# ${findingLine(file, f)}\n`).join("");
        process.stdout.write(`# ${file}: valid\n${notes}${stringify(masked)}`);
      }),
    );
  return config;
}
