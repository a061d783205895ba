import type { Command } from "commander";
import { readDemoCredentials, type DemoCredentials } from "../src/runtime/demo.js";
import { DEFAULT_GATEWAY_URL, login, type StaffClient, createWorkerClient, type WorkerClient } from "@model-gateway/worker-kit";
import { dataDirOf } from "./context.js";

// How `gateway support` and its twins reach the gateway: over HTTP like any client (never its database), as a
// staff member (email and password through the login route, whose throttle applies) and, for jobs, with the
// gateway's bot token. Each setting comes from its flag, else the demo's saved credentials (--demo), else the
// environment. No UI import here: the twins load this and never Ink.

export interface AccessOptions {
  url?: string;
  email?: string;
  passwordStdin?: boolean;
  demo?: boolean;
  dataDir?: string;
}

export interface SupportAccess {
  baseUrl: string;
  email?: string;
  password?: string;
  botToken?: string;
}

export interface AccessSources {
  env: NodeJS.ProcessEnv;
  readStdin(): Promise<string>;
  readDemo(dataDir: string): Promise<DemoCredentials | null>;
}

export const processSources = (): AccessSources => ({ env: process.env, readStdin: readAllStdin, readDemo: readDemoCredentials });

/** The options every `gateway support` command takes. */
export function withAccessOptions(cmd: Command): Command {
  return cmd
    .option("--url <url>", `the gateway's root (default: $GATEWAY_URL, else ${DEFAULT_GATEWAY_URL})`)
    .option("--email <email>", "staff email (default: $GATEWAY_EMAIL)")
    .option("--password-stdin", "read the password from stdin (default: $GATEWAY_PASSWORD)")
    .option("--demo", "use the demo's saved credentials (url, admin login, bot token) from the data dir")
    .option("--data-dir <dir>", "the demo's data dir (default: $GATEWAY_DATA_DIR, else ./.gateway)");
}

const nonEmpty = (value: string | undefined) => (value === undefined || value === "" ? undefined : value);

/** The gateway's root for every command that speaks to it over HTTP: the flag, the demo's, $GATEWAY_URL, the default. */
export function gatewayUrl(flag: string | undefined, demoUrl: string | undefined, env: NodeJS.ProcessEnv): string {
  return flag ?? demoUrl ?? nonEmpty(env.GATEWAY_URL) ?? DEFAULT_GATEWAY_URL;
}

/** The one line for `--demo` without a demo to read. */
export const noDemoCredentials = (dataDir: string) =>
  new Error(`no demo credentials in ${dataDir}: start the demo first (npm start, or gateway serve --demo), or pass --data-dir`);

export async function resolveAccess(opts: AccessOptions, sources: AccessSources): Promise<SupportAccess> {
  let demo: DemoCredentials | null = null;
  if (opts.demo) {
    const dataDir = dataDirOf({ dataDir: opts.dataDir });
    demo = await sources.readDemo(dataDir);
    if (demo === null) throw noDemoCredentials(dataDir);
  }
  const password = opts.passwordStdin ? (await sources.readStdin()).replace(/\r?\n$/, "") : undefined;
  return {
    baseUrl: gatewayUrl(opts.url, demo?.url, sources.env),
    email: opts.email ?? demo?.email ?? nonEmpty(sources.env.GATEWAY_EMAIL),
    password: nonEmpty(password) ?? demo?.password ?? nonEmpty(sources.env.GATEWAY_PASSWORD),
    botToken: demo?.bot_token ?? nonEmpty(sources.env.SUPPORT_BOT_TOKEN),
  };
}

/** Logs in, runs `work`, and logs out whatever happened, so a script leaves no session behind. */
export async function withStaff<T>(access: SupportAccess, work: (staff: StaffClient) => Promise<T>): Promise<T> {
  if (!access.email) throw new Error("no staff email: pass --email, set GATEWAY_EMAIL, or use --demo");
  if (!access.password) throw new Error("no password: set GATEWAY_PASSWORD, pass --password-stdin, or use --demo");
  const staff = await login({ baseUrl: access.baseUrl, email: access.email, password: access.password });
  try {
    return await work(staff);
  } finally {
    // A logout that fails must not hide the answer or the error before it: the session expires on its own.
    await staff.logout().catch(() => undefined);
  }
}

export function workerOf(access: SupportAccess): WorkerClient {
  if (!access.botToken) throw new Error("no bot token: set SUPPORT_BOT_TOKEN (the gateway's), or use --demo to read the demo's");
  return createWorkerClient({ baseUrl: access.baseUrl, botToken: access.botToken });
}

export async function readAllStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
