import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Services } from "./services.js";

export interface DemoCredentials {
  email: string;
  /** Null when the demo user predates the saved credentials (its password was never stored). */
  password: string | null;
  key: string;
  /** Where the demo gateway listens, and its support bot token: what `gateway worker run --demo` and `gateway support --demo` read. */
  url?: string;
  bot_token?: string;
}

const DEMO_EMAIL = "demo@example.com";

/** The chat model of the built-in demo config (src/config/demo.ts) that `gateway worker run --demo` drafts with. */
export const DEMO_WORKER_MODEL = "demo-small";

// Demo only: the demo key's secret is kept in the data dir (mode 0600) so a second `--demo` start can print it
// again. Real keys are shown once and only their hash is stored.
const credentialsFile = (dataDir: string) => path.join(dataDir, "demo-credentials.json");

// With DATABASE_URL no embedded database has created the data dir: the demo's file may be the first thing in it.
async function writeCredentials(dataDir: string, credentials: DemoCredentials): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o755 });
  await writeFile(credentialsFile(dataDir), JSON.stringify(credentials, null, 2), { mode: 0o600 });
}

/** The demo credentials saved in `dataDir`, or null when there are none. */
export async function readDemoCredentials(dataDir: string): Promise<DemoCredentials | null> {
  try {
    return JSON.parse(await readFile(credentialsFile(dataDir), "utf8")) as DemoCredentials;
  } catch {
    return null;
  }
}

/**
 * The support bot token of a demo start: SUPPORT_BOT_TOKEN when set (it wins), else the one an earlier start
 * saved, else a new one (32 random bytes, hex), so the demo's worker endpoints are open out of the box and a
 * worker started with `--demo` keeps working across restarts.
 */
export async function demoBotToken(dataDir: string, env: NodeJS.ProcessEnv): Promise<string> {
  return env.SUPPORT_BOT_TOKEN || (await readDemoCredentials(dataDir))?.bot_token || randomBytes(32).toString("hex");
}

/** Saves where the demo listens and its bot token beside its credentials, for `gateway worker run --demo`. */
export async function saveDemoRuntime(dataDir: string, credentials: DemoCredentials, runtime: { url: string; bot_token: string }) {
  const saved = { ...credentials, ...runtime };
  await writeCredentials(dataDir, saved);
  return saved;
}

/** Makes sure the demo user and a working demo key exist; reuses them across restarts. */
export async function seedDemo(services: Services, dataDir: string): Promise<DemoCredentials> {
  const { users, apiKeys, keyAuth } = services.auth;
  const saved = await readDemoCredentials(dataDir);
  if (saved && (await users.find(saved.email)) && (await keyAuth.authenticate(saved.key))) return saved;

  let password = saved?.password ?? null;
  if (!(await users.find(DEMO_EMAIL))) {
    // Never shorter than the configured minimum (base64url: 4 characters per 3 bytes; 16 at the least).
    password = randomBytes(Math.max(12, Math.ceil((services.config.auth.password_min_length * 3) / 4))).toString("base64url");
    await users.create({ email: DEMO_EMAIL, password, role: "admin" });
  }
  const { key } = await apiKeys.create({ user: DEMO_EMAIL, kind: "inference", name: "demo" });
  const credentials = { email: DEMO_EMAIL, password, key };
  await writeCredentials(dataDir, credentials);
  return credentials;
}
