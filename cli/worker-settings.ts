import os from "node:os";
import { DEMO_WORKER_MODEL, type DemoCredentials } from "../src/runtime/demo.js";
import { gatewayUrl, noDemoCredentials } from "./support-access.js";

// What `gateway worker run` runs with, from its options, the environment and (with --demo) the demo's saved
// credentials. Pure: the command reads the file and the environment and passes them in. Secrets come from the
// environment or the demo's file (mode 0600), never from argv, where any local user could read them in `ps`.

export interface WorkerRunOptions {
  url?: string;
  model?: string;
  concurrency?: number;
  leaseSeconds?: number;
  workerId?: string;
  demo?: boolean;
  dataDir?: string;
}

export interface WorkerSettings {
  url: string;
  model: string;
  botToken: string;
  apiKey: string;
  workerId: string;
  concurrency?: number;
  leaseSeconds?: number;
}

export function defaultWorkerId(): string {
  return `${os.hostname()}-${process.pid}`;
}

/**
 * `demo` is the demo's credentials file when `--demo` was given (null when there is none). Throws one line
 * naming what is missing.
 */
export function workerSettings(
  opts: WorkerRunOptions,
  env: NodeJS.ProcessEnv,
  demo: { dataDir: string; credentials: DemoCredentials | null } | null,
  workerId: string,
): WorkerSettings {
  const common = { workerId: opts.workerId ?? workerId, concurrency: opts.concurrency, leaseSeconds: opts.leaseSeconds };
  if (demo) {
    const saved = demo.credentials;
    if (!saved) throw noDemoCredentials(demo.dataDir);
    if (!saved.url || !saved.bot_token) {
      throw new Error(`the demo in ${demo.dataDir} saved no url or bot token: restart it (npm start) with this version`);
    }
    return {
      ...common,
      url: gatewayUrl(opts.url, saved.url, env),
      model: opts.model ?? DEMO_WORKER_MODEL,
      botToken: saved.bot_token,
      apiKey: saved.key,
    };
  }
  if (!env.SUPPORT_BOT_TOKEN) throw new Error("SUPPORT_BOT_TOKEN is not set: the worker needs the gateway's support bot token");
  if (!env.GATEWAY_API_KEY) throw new Error("GATEWAY_API_KEY is not set: the worker needs an inference API key for its chat calls");
  if (!opts.model) throw new Error("--model is required (a chat model of the gateway), unless --demo");
  return {
    ...common,
    url: gatewayUrl(opts.url, undefined, env),
    model: opts.model,
    botToken: env.SUPPORT_BOT_TOKEN,
    apiKey: env.GATEWAY_API_KEY,
  };
}
