import { describe, expect, it } from "vitest";
import { workerSettings } from "../../../cli/worker-settings.js";
import { demoConfig } from "../../../src/config/demo.js";
import { DEMO_WORKER_MODEL } from "../../../src/runtime/demo.js";

// `gateway worker run`'s settings: secrets from the environment or the demo's file, never from options.
const env = { SUPPORT_BOT_TOKEN: "bot-token", GATEWAY_API_KEY: "gw_key" };
const demoFile = { email: "demo@example.com", password: null, key: "gw_demo", url: "http://127.0.0.1:4321", bot_token: "demo-bot" };

describe("workerSettings", () => {
  it("takes the secrets from the environment and the rest from the options", () => {
    const s = workerSettings({ model: "m", url: "http://gw:1", concurrency: 3, leaseSeconds: 90, workerId: "w1" }, env, null, "host-1");
    expect(s).toEqual({
      url: "http://gw:1",
      model: "m",
      botToken: "bot-token",
      apiKey: "gw_key",
      workerId: "w1",
      concurrency: 3,
      leaseSeconds: 90,
    });
    const defaults = workerSettings({ model: "m" }, env, null, "host-1");
    expect(defaults).toMatchObject({ url: "http://127.0.0.1:8080", workerId: "host-1" });
  });

  it("refuses to start without the bot token, the key or a model, in one line each", () => {
    expect(() => workerSettings({ model: "m" }, { GATEWAY_API_KEY: "k" }, null, "h")).toThrow(/^SUPPORT_BOT_TOKEN is not set/);
    expect(() => workerSettings({ model: "m" }, { SUPPORT_BOT_TOKEN: "t" }, null, "h")).toThrow(/^GATEWAY_API_KEY is not set/);
    expect(() => workerSettings({}, env, null, "h")).toThrow(/^--model is required/);
  });

  it("with --demo reads the url, key and bot token from the demo's file and drafts with a demo chat model", () => {
    const s = workerSettings({ demo: true }, {}, { dataDir: "/d", credentials: demoFile }, "h");
    expect(s).toMatchObject({ url: "http://127.0.0.1:4321", model: DEMO_WORKER_MODEL, botToken: "demo-bot", apiKey: "gw_demo" });
    expect(demoConfig("http://mock", "k").models?.[DEMO_WORKER_MODEL]).toMatchObject({ kind: "chat" });
    expect(
      workerSettings({ demo: true, url: "http://other:1", model: "demo-large" }, {}, { dataDir: "/d", credentials: demoFile }, "h"),
    ).toMatchObject({
      url: "http://other:1",
      model: "demo-large",
    });
  });

  it("with --demo says to start the demo when its file is missing or older than the worker", () => {
    expect(() => workerSettings({ demo: true }, env, { dataDir: "/d", credentials: null }, "h")).toThrow(
      "no demo credentials in /d: start the demo first",
    );
    const old = { email: "demo@example.com", password: null, key: "gw_demo" };
    expect(() => workerSettings({ demo: true }, env, { dataDir: "/d", credentials: old }, "h")).toThrow(
      /saved no url or bot token: restart it/,
    );
  });
});
