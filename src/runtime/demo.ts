import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
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

// Demo only: the demo key's secret is kept in the data dir (mode 0600) so a second `--demo` start can print it
// again. Real keys are shown once and only their hash is stored.
const credentialsFile = (dataDir: string) => path.join(dataDir, "demo-credentials.json");

/** The demo credentials saved in `dataDir`, or null when there are none. */
export async function readDemoCredentials(dataDir: string): Promise<DemoCredentials | null> {
  try {
    return JSON.parse(await readFile(credentialsFile(dataDir), "utf8")) as DemoCredentials;
  } catch {
    return null;
  }
}

/** Makes sure the demo user and a working demo key exist; reuses them across restarts. */
export async function seedDemo(services: Services, dataDir: string): Promise<DemoCredentials> {
  const { users, apiKeys, keyAuth } = services.auth;
  const saved = await readDemoCredentials(dataDir);
  if (saved && (await users.find(saved.email)) && (await keyAuth.authenticate(saved.key))) return saved;

  let password = saved?.password ?? null;
  if (!(await users.find(DEMO_EMAIL))) {
    password = randomBytes(9).toString("base64url");
    await users.create({ email: DEMO_EMAIL, password, role: "admin" });
  }
  const { key } = await apiKeys.create({ user: DEMO_EMAIL, kind: "inference", name: "demo" });
  const credentials = { email: DEMO_EMAIL, password, key };
  await writeFile(credentialsFile(dataDir), JSON.stringify(credentials, null, 2), { mode: 0o600 });
  return credentials;
}
