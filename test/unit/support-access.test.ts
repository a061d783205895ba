import { describe, expect, it } from "vitest";
import { resolveAccess, type AccessSources } from "../../cli/support-access.js";

// Where `gateway support` takes each setting from: its flag, else the demo's saved credentials (--demo), else the
// environment, else the default address.

function sources(env: NodeJS.ProcessEnv, demo: Record<string, string> | null = null, stdin = ""): AccessSources & { dirs: string[] } {
  const dirs: string[] = [];
  return {
    dirs,
    env,
    readStdin: async () => stdin,
    readDemo: async (dir) => {
      dirs.push(dir);
      return demo as never;
    },
  };
}

const demo = { email: "demo@example.com", password: "demo-pw", key: "k", url: "http://demo:1", bot_token: "demo-bot" };

describe("resolveAccess", () => {
  it("defaults to the local gateway and reads the environment", async () => {
    expect(await resolveAccess({}, sources({}))).toEqual({ baseUrl: "http://127.0.0.1:8080" });
    const env = { GATEWAY_URL: "http://gw:2", GATEWAY_EMAIL: "e@x", GATEWAY_PASSWORD: "pw", SUPPORT_BOT_TOKEN: "bot" };
    expect(await resolveAccess({}, sources(env))).toEqual({ baseUrl: "http://gw:2", email: "e@x", password: "pw", botToken: "bot" });
  });

  it("prefers flags, then the demo, then the environment; the password from stdin loses its newline", async () => {
    const env = { GATEWAY_URL: "http://gw:2", GATEWAY_PASSWORD: "env-pw", SUPPORT_BOT_TOKEN: "env-bot" };
    const s = sources(env, demo, "typed-pw\n");
    expect(await resolveAccess({ demo: true, dataDir: "/tmp/d", url: "http://flag:3", passwordStdin: true }, s)).toEqual({
      baseUrl: "http://flag:3",
      email: "demo@example.com",
      password: "typed-pw",
      botToken: "demo-bot",
    });
    expect(s.dirs).toEqual(["/tmp/d"]);
    const older = { email: "demo@example.com", password: "demo-pw", key: "k" };
    expect(await resolveAccess({ demo: true, dataDir: "/tmp/d" }, sources(env, older))).toMatchObject({
      baseUrl: "http://gw:2",
      botToken: "env-bot",
    });
  });

  it("says where it looked when --demo finds no credentials", async () => {
    await expect(resolveAccess({ demo: true, dataDir: "/tmp/none" }, sources({}))).rejects.toThrow(/^no demo credentials in \/tmp\/none: /);
  });
});
