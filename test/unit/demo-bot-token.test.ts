import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { demoBotToken, readDemoCredentials, saveDemoRuntime } from "../../src/runtime/demo.js";

// The demo's support bot token: SUPPORT_BOT_TOKEN wins; else the saved one is reused; else a new random one.
describe("demoBotToken", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });
  const dataDir = async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "gateway-demo-token-"));
    dirs.push(dir);
    return dir;
  };
  const creds = { email: "demo@example.com", password: "pw", key: "gw_k" };

  it("makes a new 32-byte hex token on a fresh data dir, and another one each time until one is saved", async () => {
    const dir = await dataDir();
    const first = await demoBotToken(dir, {});
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    expect(await demoBotToken(dir, {})).not.toBe(first);
  });

  it("reuses the saved token, and SUPPORT_BOT_TOKEN wins over it", async () => {
    const dir = await dataDir();
    const saved = await saveDemoRuntime(dir, creds, { url: "http://127.0.0.1:1", bot_token: "saved-token" });
    expect(saved).toEqual({ ...creds, url: "http://127.0.0.1:1", bot_token: "saved-token" });
    expect(await readDemoCredentials(dir)).toEqual(saved);
    expect(await demoBotToken(dir, {})).toBe("saved-token");
    expect(await demoBotToken(dir, { SUPPORT_BOT_TOKEN: "from-env" })).toBe("from-env");
    expect(JSON.parse(await readFile(path.join(dir, "demo-credentials.json"), "utf8"))).toMatchObject({ bot_token: "saved-token" });
  });
});
