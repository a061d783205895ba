import { Command, InvalidArgumentError, Option } from "commander";
import pino from "pino";
import { readDemoCredentials } from "../src/runtime/demo.js";
import { chooseLogFormat, createLogger, logDestination, logFormats, type LogFormat } from "../src/logger.js";
import { LEASE_SECONDS } from "@model-gateway/worker-kit/wire/support";
import { createRunner, createWorkerClient, DEFAULT_GATEWAY_URL, RUNNER_DEFAULTS, stopOnSignals } from "@model-gateway/worker-kit";
import { referenceTasks } from "@model-gateway/worker-kit/reference";
import { dataDirOf } from "./context.js";
import { action } from "./output.js";
import { defaultWorkerId, workerSettings, type WorkerRunOptions } from "./worker-settings.js";

// `gateway worker run`: the reference worker (worker-kit/reference) on the worker-kit runner. It answers support
// jobs by calling the gateway's own chat route, so its model calls are metered like any client's. Its log lines go
// to stdout, pretty on a terminal and JSON otherwise, as `gateway serve` decides: a start line, then the runner's (a
// job claimed, a job's outcome, an outage of the gateway, the stop).

const intFrom = (min: number, max: number) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer ${min}..${max}`);
  return n;
};

export function workerCommand(): Command {
  const worker = new Command("worker");
  worker
    .command("run")
    .description("run the reference support worker (secrets from SUPPORT_BOT_TOKEN and GATEWAY_API_KEY, or --demo)")
    .option("--url <url>", `the gateway's root (default: the demo's with --demo, else $GATEWAY_URL, else ${DEFAULT_GATEWAY_URL})`)
    .option("--model <model>", "the chat model the worker drafts with (--demo: the demo's demo-small)")
    .option("--concurrency <n>", "jobs worked at once", intFrom(1, 100), RUNNER_DEFAULTS.concurrency)
    .option(
      "--lease-seconds <n>",
      `lease asked per job (${LEASE_SECONDS.min}..${LEASE_SECONDS.max})`,
      intFrom(LEASE_SECONDS.min, LEASE_SECONDS.max),
      RUNNER_DEFAULTS.leaseSeconds,
    )
    .option("--worker-id <id>", "the worker's id in claims (default: hostname-pid)")
    .option("--demo", "use the url, API key and bot token `gateway serve --demo` saved in the data dir")
    .option("--data-dir <dir>", "the demo's data dir (default: $GATEWAY_DATA_DIR, else ./.gateway)")
    .addOption(new Option("--log-format <format>", "log lines as pretty text or JSON (default: pretty on a terminal)").choices(logFormats))
    .addHelpText(
      "after",
      `\nCtrl-C stops claiming and waits up to ${RUNNER_DEFAULTS.shutdownDeadlineMs / 1000} s for the jobs in flight; ` +
        "Ctrl-C again gives them back to the queue at once.",
    )
    .action(
      action(async (opts: WorkerRunOptions & { logFormat?: LogFormat }) => {
        const dataDir = dataDirOf(opts);
        const demo = opts.demo ? { dataDir, credentials: await readDemoCredentials(dataDir) } : null;
        const settings = workerSettings(opts, process.env, demo, defaultWorkerId());
        // Synchronous: a handful of lines per job, and none may be lost when the process exits after a stop.
        const format = chooseLogFormat(opts.logFormat, process.stdout.isTTY === true);
        const out = format === "json" ? pino.destination({ fd: 1, sync: true }) : logDestination(format);
        const logger = createLogger(process.env.GATEWAY_LOG_LEVEL ?? "info", out).child({
          component: "worker",
          worker_id: settings.workerId,
        });
        const runner = createRunner({
          client: createWorkerClient({ baseUrl: settings.url, botToken: settings.botToken }),
          tasks: referenceTasks({ url: settings.url, apiKey: settings.apiKey, model: settings.model }),
          workerId: settings.workerId,
          concurrency: settings.concurrency,
          leaseSeconds: settings.leaseSeconds,
          logger,
        });
        logger.info(
          { url: settings.url, model: settings.model, concurrency: settings.concurrency, demo: Boolean(opts.demo) },
          "worker started",
        );
        runner.start();
        await stopOnSignals(runner);
        logger.info("worker stopped");
        process.exit(0);
      }),
    );
  return worker;
}
