import { describe, expect, it } from "vitest";
import { demoConfig } from "../../src/config/demo.js";
import { configFindings, refuseErrors } from "../../src/config/findings.js";
import { ConfigError, parseConfig } from "../../src/config/load.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { chooseLogFormat } from "../../src/logger.js";

const config = (input: ConfigInput) => parseConfig(input, "test.yaml", {});
const openai = { protocol: "openai", base_url: "https://api.example.com/v1" } as const;
const chat = (...targets: string[]) => ({ kind: "chat", upstream: "m", targets }) as const;

describe("configFindings", () => {
  it("finds nothing in the built-in demo config", () => {
    expect(configFindings(config(demoConfig("http://127.0.0.1:9", "k")))).toEqual([]);
  });

  it("refuses a config without models: nothing to serve", () => {
    expect(configFindings(config({ providers: { main: openai } }))).toContainEqual({
      level: "error",
      path: "models",
      message: expect.stringMatching(/no models/),
    });
  });

  it.each([
    ["anthropic", "https://api.anthropic.com/v1", "/v1"],
    ["anthropic", "https://api.anthropic.com/v1/messages/", "/v1/messages"],
    ["gemini", "https://generativelanguage.googleapis.com/v1beta", "/v1beta"],
    ["systemone", "https://eval.example.com/v1/systemone", "/v1/systemone"],
    ["openai", "https://api.example.com/v1/chat/completions", "/chat/completions"],
  ] as const)("refuses a %s base_url ending in the path the gateway appends (%s)", (protocol, base_url, suffix) => {
    const kind = protocol === "systemone" ? "systemone" : "chat";
    const findings = configFindings(
      config({ providers: { p: { protocol, base_url } }, models: { m: { kind, upstream: "1.13.0", targets: ["p"] } } }),
    );
    expect(findings).toEqual([{ level: "error", path: "providers.p.base_url", message: expect.stringContaining(`ends in ${suffix}`) }]);
  });

  it("accepts the host roots and OpenAI paths other than /v1, and warns about an OpenAI base_url without a path", () => {
    const providers = {
      a: { protocol: "anthropic", base_url: "https://api.anthropic.com/" },
      g: { protocol: "gemini", base_url: "https://generativelanguage.googleapis.com" },
      groq: { protocol: "openai", base_url: "https://api.groq.com/openai/v1" },
      bare: { protocol: "openai", base_url: "https://api.example.com" },
    } as const;
    const findings = configFindings(config({ providers, models: { m: chat("a", "g", "groq", "bare") } }));
    expect(findings).toEqual([{ level: "warning", path: "providers.bare.base_url", message: expect.stringMatching(/has no path/) }]);
  });

  it("refuses a base_url with a query string, which is never sent", () => {
    const findings = configFindings(
      config({ providers: { p: { ...openai, base_url: "https://x.example.com/v1?api-version=1" } }, models: { m: chat("p") } }),
    );
    expect(findings).toEqual([{ level: "error", path: "providers.p.base_url", message: expect.stringMatching(/query string/) }]);
  });

  it("refuses a model no target of which a route of its kind can call, and warns about a target never tried", () => {
    const findings = configFindings(
      config({
        providers: { main: openai, claude: { protocol: "anthropic", base_url: "https://api.anthropic.com" } },
        models: {
          embed: { kind: "embedding", upstream: "e", targets: ["claude"] },
          mixed: { kind: "embedding", upstream: "e", targets: ["main", "claude"] },
          chat: chat("claude", "main"),
        },
      }),
    );
    expect(findings).toEqual([
      {
        level: "error",
        path: "models.embed.targets",
        message: expect.stringMatching(/no route serves kind embedding on protocol anthropic/),
      },
      {
        level: "warning",
        path: "models.mixed.targets.1",
        message: expect.stringMatching(/protocol anthropic cannot serve kind embedding/),
      },
    ]);
  });

  it("refuses a video model on an openai target whose durations OpenAI cannot make", () => {
    const video = { protocol: "video", base_url: "https://video.example.com/v1" } as const;
    const sora = (targets: string[], default_seconds: number, max_seconds: number) =>
      ({ kind: "video", upstream: "sora-2", targets, video_price: { units_per_second: 1, default_seconds, max_seconds } }) as const;
    const findings = configFindings(
      config({
        providers: { main: openai, vid: video },
        models: { fits: sora(["main"], 8, 10), odd: sora(["vid", "main"], 5, 20), short: sora(["main"], 2, 3), own: sora(["vid"], 5, 20) },
      }),
    );
    expect(findings).toEqual([
      {
        level: "error",
        path: "models.odd.video_price.default_seconds",
        message: expect.stringMatching(/is 5: OpenAI makes videos of 4, 8, 12 seconds only/),
      },
      { level: "error", path: "models.short.video_price.default_seconds", message: expect.stringMatching(/is 2/) },
      { level: "error", path: "models.short.video_price.max_seconds", message: expect.stringMatching(/is 3: .* allows at least 4/) },
    ]);
  });

  it("serves image models on gemini targets, as on openai ones", () => {
    const gemini = { protocol: "gemini" as const, base_url: "https://generativelanguage.googleapis.com" };
    const findings = configFindings(
      config({
        providers: { main: openai, gemini },
        models: {
          m: chat("main"),
          image: { kind: "image", upstream: "gemini-2.5-flash-image", targets: ["gemini", "main"] },
        },
      }),
    );
    expect(findings).toEqual([]);
  });

  it("warns about a provider no model uses", () => {
    const findings = configFindings(config({ providers: { main: openai, spare: openai }, models: { m: chat("main") } }));
    expect(findings).toEqual([{ level: "warning", path: "providers.spare", message: "no model uses this provider" }]);
  });

  it("refuseErrors throws the first error as a ConfigError naming how many more there are, and lets warnings pass", () => {
    const warning = { level: "warning", path: "providers.x", message: "w" } as const;
    expect(() => refuseErrors([warning], "f.yaml")).not.toThrow();
    const errors = [
      { level: "error", path: "models", message: "first" },
      { level: "error", path: "providers.p.base_url", message: "second" },
    ] as const;
    let thrown: unknown;
    try {
      refuseErrors([...errors, warning], "f.yaml");
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).message).toBe("invalid config f.yaml at models: first (and 1 more: `gateway config check` lists them)");
  });
});

describe("chooseLogFormat", () => {
  it("uses the named format, else pretty on a terminal and JSON elsewhere", () => {
    expect(chooseLogFormat(undefined, true)).toBe("pretty");
    expect(chooseLogFormat("auto", false)).toBe("json");
    expect(chooseLogFormat("json", true)).toBe("json");
    expect(chooseLogFormat("pretty", false)).toBe("pretty");
  });
});
