import path from "node:path";
import { Command, Option } from "commander";
import { loadConfigFile } from "../src/config/load.js";
import type { Config } from "../src/config/schema.js";
import { startMockUpstream, type MockUpstream } from "../src/mock-upstream/server.js";
import { demoBotToken, saveDemoRuntime, seedDemo, type DemoCredentials } from "../src/runtime/demo.js";
import { startGateway, type RunningGateway } from "../src/runtime/gateway.js";
import { shutdownSignals } from "../src/runtime/shutdown-signals.js";
import { configFindings, refuseErrors } from "../src/config/findings.js";
import { chooseLogFormat, createLogger, logDestination, logFormats, type LogFormat } from "../src/logger.js";
import { builtInDemoConfig, configPathOf, dataDirOf } from "./context.js";
import { isLoopbackHost, isWildcardHost } from "../src/server/loopback.js";
import { action } from "./output.js";
import { parsePort } from "./options.js";

interface ServeOptions {
  config?: string;
  host?: string;
  port?: number;
  dataDir?: string;
  demo?: boolean;
  demoPublic?: boolean;
  worker: boolean;
  logFormat?: LogFormat;
}

const say = (line: string) => process.stderr.write(`${line}\n`);

/**
 * Where the server listens, as the operator should read it: the url (a wildcard shown as 127.0.0.1, the address
 * a client on this machine uses) plus, for a wildcard, that every interface answers.
 */
function listeningOn(host: string, url: string): string {
  return isWildcardHost(host) ? `${url} (listening on ${host}: every interface of this machine)` : url;
}

function banner(where: string, url: string, creds: DemoCredentials, dataDir: string, exposed: boolean, config: string): string {
  // The worker reads the demo's credentials from the data dir: name it unless it is the default one.
  const dataDirFlag = dataDir === path.resolve(".gateway") ? "" : ` --data-dir ${dataDir}`;
  return [
    "",
    `Gateway demo is ready at ${where}`,
    ...(exposed ? ["  warning: other machines can reach this demo and its admin user over plain HTTP (--demo-public)"] : []),
    `  demo user: ${creds.email}${creds.password ? ` / password ${creds.password}` : ""} (admin)`,
    `  API key:   ${creds.key}`,
    `  config:    ${config}`,
    "",
    "Try it:",
    `  curl -s ${url}/v1/models -H "Authorization: Bearer ${creds.key}"`,
    "  (README.md has a curl for every route: chat, responses, embeddings, messages, generateContent)",
    "",
    "Answer support cases with the reference worker (in another terminal):",
    `  npx gateway worker run --demo${dataDirFlag}`,
    "",
    "Ctrl-C stops the gateway, its worker and the embedded PostgreSQL.",
    "",
  ].join("\n");
}

export function serveCommand(): Command {
  return new Command("serve")
    .option("--config <file>", "config file (default: $GATEWAY_CONFIG, else ./gateway.yaml)")
    .option("--host <host>", "listen address (overrides server.host)")
    .option("--port <port>", "listen port (overrides server.port)", parsePort)
    .option("--data-dir <dir>", "data dir of the embedded database (default: $GATEWAY_DATA_DIR, else ./.gateway)")
    .option("--demo", "seed a demo user and key; without a config file, use the built-in demo config and mock upstream")
    .option("--demo-public", "let --demo listen on an address other machines can reach (it serves an admin user over plain HTTP)")
    .option("--no-worker", "do not run background jobs in this process")
    .addOption(
      new Option("--log-format <format>", "log lines as pretty text or JSON (default: logging.format, else pretty on a terminal)").choices(
        logFormats,
      ),
    )
    .action(action(serve));
}

/** Starts the gateway (on the mock upstream for the built-in demo config), then seeds the demo and says where it listens. */
async function serve(opts: ServeOptions): Promise<void> {
  // The demo runs its own config unless one is named on its command line: an operator's ./gateway.yaml or
  // GATEWAY_CONFIG (with providers whose secrets this shell may not have) is not what `npm start` means.
  const file = opts.demo ? opts.config && path.resolve(opts.config) : configPathOf(opts);
  if (!file && !opts.demo) {
    throw new Error("no config file: pass --config FILE, set GATEWAY_CONFIG, create ./gateway.yaml, or run with --demo");
  }
  // Before anything starts: the demo's admin password is printed and its routes are plain HTTP.
  const host = opts.host ?? (file ? loadConfigFile(file).server.host : "127.0.0.1");
  const exposed = !isLoopbackHost(host);
  if (opts.demo && exposed && !opts.demoPublic) {
    throw new Error(
      `refusing --demo on ${host}${isWildcardHost(host) ? " (every interface)" : ""}: other machines could use its admin user over plain HTTP; listen on 127.0.0.1, or pass --demo-public to mean it`,
    );
  }
  const mock = !file ? await startMockUpstream({ apiKey: "mock-key" }) : undefined;
  let config: Config = file ? loadConfigFile(file) : builtInDemoConfig(mock!.url, "mock-key");
  const findings = configFindings(config);
  refuseErrors(findings, file ?? "built-in demo config");
  config = {
    ...config,
    server: { ...config.server, host: opts.host ?? config.server.host, port: opts.port ?? config.server.port },
  };
  const dataDir = dataDirOf(opts);
  const format = chooseLogFormat(opts.logFormat ?? config.logging.format, process.stdout.isTTY === true);
  const logger = createLogger(config.logging.level, logDestination(format));
  for (const f of findings) logger.warn({ config_path: f.path }, `config: ${f.message}`);
  say(`starting gateway (${file ? `config ${file}` : "built-in demo config"}, data dir ${dataDir})…`);
  // The demo opens the support workers' endpoints with a bot token of its own unless one is given.
  const botToken = opts.demo ? await demoBotToken(dataDir, process.env) : undefined;
  const gateway = await startGateway({
    config,
    dataDir,
    env: botToken ? { ...process.env, SUPPORT_BOT_TOKEN: botToken } : process.env,
    logger,
    worker: opts.worker,
  }).catch(async (err: unknown) => {
    await mock?.close();
    throw err;
  });

  stopOnSignals(gateway, mock);

  if (botToken) {
    const credentials = await seedDemo(gateway.services, dataDir);
    const saved = await saveDemoRuntime(dataDir, credentials, { url: gateway.url, bot_token: botToken });
    const served = file ?? `the built-in demo config (its models on the mock upstream at ${mock!.url})`;
    say(banner(listeningOn(config.server.host, gateway.url), gateway.url, saved, dataDir, exposed, served));
  } else say(`gateway listening on ${listeningOn(config.server.host, gateway.url)}`);
}

/** SIGINT and SIGTERM stop the gateway and the demo's mock upstream, step by step as src/runtime/shutdown-signals.ts says. */
function stopOnSignals(gateway: RunningGateway, mock: MockUpstream | undefined): void {
  const next = shutdownSignals();
  const shutdown = async (signal: string) => {
    const step = next();
    if (step === "ignore") return;
    if (step === "exit") process.exit(1);
    if (step === "hurry") {
      say(`${signal} again: cutting open connections, still stopping PostgreSQL (once more to exit at once)`);
      gateway.hurry();
      return;
    }
    say(`${signal}: draining requests and stopping…`);
    await gateway.stop();
    await mock?.close();
    say("stopped");
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}
