import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { interpolate } from "../../src/config/interpolate.js";
import { ConfigError, loadConfigFile, parseConfig } from "../../src/config/load.js";
import { maskSecrets } from "../../src/config/mask.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "gateway-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
};

const minimal = `
providers:
  main:
    protocol: openai
    base_url: https://api.example.com/v1
    api_key: \${MAIN_API_KEY}
models:
  gpt-4o-mini:
    kind: chat
    upstream: gpt-4o-mini-2024-07-18
    targets: [main, { provider: main, model: other }]
    token_multiplier: 1
plans:
  free: { daily_tokens: 200000, weekly_resets: 1, context_limit: 128000 }
`;

function failure(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("config loading", () => {
  it("loads a minimal config with defaults filled in", () => {
    const config = loadConfigFile(file("ok.yaml", minimal), { MAIN_API_KEY: "sk-secret" });
    expect(config.providers.main!.api_key).toBe("sk-secret");
    expect(config.models["gpt-4o-mini"]!.targets).toEqual(["main", { provider: "main", model: "other" }]);
    expect(config.server.port).toBe(8080);
    expect(config.default_plan).toBe("free");
  });

  it.each([
    ["unknown provider in targets", minimal.replace("[main,", "[nope,"), "models.gpt-4o-mini.targets.0"],
    ["bad protocol", minimal.replace("protocol: openai", "protocol: carrier-pigeon"), "providers.main.protocol"],
    ["negative multiplier", minimal.replace("token_multiplier: 1", "token_multiplier: -1"), "models.gpt-4o-mini.token_multiplier"],
    ["unknown key", `${minimal}\nsurprise: 1\n`, ""],
    ["port out of range", `${minimal}\nserver: { port: 70000 }\n`, "server.port"],
    ["unknown default plan", `${minimal}\ndefault_plan: gold\n`, "default_plan"],
    ["missing env var", minimal, "providers.main.api_key"],
  ])("names the failing field: %s", (_name, text, expectedPath) => {
    const env = expectedPath === "providers.main.api_key" ? {} : { MAIN_API_KEY: "k" };
    const err = failure(() => loadConfigFile(file("bad.yaml", text), env));
    expect(err.path).toBe(expectedPath);
    expect(err.message).toContain(expectedPath === "" ? "bad.yaml" : `at ${expectedPath}`);
  });

  it("caps upstream JSON answers per capability, with defaults and positive integer overrides", () => {
    const MiB = 1024 * 1024;
    expect(parseConfig({}, "t").limits.upstream_answer_bytes).toEqual({
      chat_completions: 32 * MiB,
      responses: 32 * MiB,
      messages: 32 * MiB,
      generate_content: 32 * MiB,
      embeddings: 256 * MiB,
      evaluate: 128 * MiB,
      images: 256 * MiB,
      video: 1 * MiB,
    });
    const config = loadConfigFile(file("limits.yaml", `limits:\n  upstream_answer_bytes: { chat_completions: 1024, video: 1 }\n`));
    expect(config.limits.upstream_answer_bytes).toMatchObject({ chat_completions: 1024, video: 1, responses: 32 * MiB });
  });

  it.each([
    ["zero", "chat_completions: 0", "limits.upstream_answer_bytes.chat_completions"],
    ["negative", "embeddings: -1", "limits.upstream_answer_bytes.embeddings"],
    ["fractional", "evaluate: 1.5", "limits.upstream_answer_bytes.evaluate"],
    ["not a number", "messages: lots", "limits.upstream_answer_bytes.messages"],
    ["longer than a string can be", "images: 1073741824", "limits.upstream_answer_bytes.images"],
    ["unknown capability", "chat: 1024", "limits.upstream_answer_bytes"],
  ])("refuses an answer cap that is %s", (_name, entry, expectedPath) => {
    const err = failure(() => loadConfigFile(file("bad-limits.yaml", `limits:\n  upstream_answer_bytes: { ${entry} }\n`)));
    expect(err.path).toBe(expectedPath);
  });

  it("downloads media under a byte cap, a timeout and a few redirects; private upstreams only when allowed", () => {
    expect(parseConfig({}, "t").media.download).toEqual({
      max_bytes: 32 * 1024 * 1024,
      timeout_ms: 30_000,
      max_redirects: 3,
      allow_private: [],
    });
    const allow = ["127.0.0.1/32", "10.0.0.0/8", "fd00::/8", "::1", "192.168.1.7", "mock-upstream.internal", "localhost."];
    expect(parseConfig({ media: { download: { allow_private: allow } } }, "t").media.download.allow_private).toEqual(allow);
  });

  it.each([
    ["a prefix too long", "allow_private: [10.0.0.0/33]", "media.download.allow_private.0"],
    ["an octet out of range", "allow_private: [127.0.0.1/32, 10.0.0.300/8]", "media.download.allow_private.1"],
    ["an IPv6 prefix too long", "allow_private: [fc00::/129]", "media.download.allow_private.0"],
    ["a mistyped address", "allow_private: [999.1.1.1]", "media.download.allow_private.0"],
    ["not a hostname", "allow_private: [mock upstream]", "media.download.allow_private.0"],
    ["a zero cap", "max_bytes: 0", "media.download.max_bytes"],
    ["too many redirects", "max_redirects: 11", "media.download.max_redirects"],
  ])("refuses a media download setting with %s", (_name, entry, expectedPath) => {
    const err = failure(() => loadConfigFile(file("bad-media.yaml", `media:\n  download: { ${entry} }\n`)));
    expect(err.path).toBe(expectedPath);
    expect(err.message).toContain(`at ${expectedPath}`);
  });

  it("keeps 35 days of the ledger, 90 of the request log and 7 of idempotency keys by default; 0 keeps for ever", () => {
    expect(parseConfig({}, "t").retention).toEqual({ ledger_days: 35, request_log_days: 90, idempotency_days: 7, batch_rows: 5000 });
    const config = loadConfigFile(
      file("retention.yaml", "retention: { ledger_days: 0, request_log_days: 400, idempotency_days: 1, batch_rows: 1 }\n"),
    );
    expect(config.retention).toEqual({ ledger_days: 0, request_log_days: 400, idempotency_days: 1, batch_rows: 1 });
    // The shortest ledger retention is a day, which the default quota.max_hold_seconds (6 h) is under.
    expect(parseConfig({ retention: { ledger_days: 1 } }, "t").retention.ledger_days).toBe(1);
    expect(parseConfig({ retention: { ledger_days: 2 }, quota: { max_hold_seconds: 86_401 } }, "t").retention.ledger_days).toBe(2);
    // From the environment too: a whole placeholder is a number.
    expect(
      loadConfigFile(file("retention-env.yaml", "retention:\n  request_log_days: ${LOG_DAYS:-0}\n"), {}).retention.request_log_days,
    ).toBe(0);
  });

  it.each([
    ["negative", "retention: { ledger_days: -1 }", "retention.ledger_days"],
    ["fractional", "retention: { request_log_days: 1.5 }", "retention.request_log_days"],
    // Under a day would break the IETF draft's 24 hours of a money call's idempotency key.
    ["idempotency keys kept less than a day", "retention: { idempotency_days: 0.5 }", "retention.idempotency_days"],
    ["longer than a century", "retention: { request_log_days: 36501 }", "retention.request_log_days"],
    ["a batch of nothing", "retention: { batch_rows: 0 }", "retention.batch_rows"],
    ["a batch too large for one short statement", "retention: { batch_rows: 100001 }", "retention.batch_rows"],
    ["an unknown key", "retention: { ledger_weeks: 5 }", "retention"],
    [
      "not more days than quota.max_hold_seconds",
      "retention: { ledger_days: 1 }\nquota: { max_hold_seconds: 86400 }",
      "retention.ledger_days",
    ],
  ])("refuses a retention that is %s", (_name, text, expectedPath) => {
    const err = failure(() => loadConfigFile(file("bad-retention.yaml", `${text}\n`)));
    expect(err.path).toBe(expectedPath);
  });

  it("serves no metrics by default; on the main address with a token, or on an address of its own", () => {
    expect(parseConfig({}, "t").metrics).toEqual({ enabled: false });
    const withToken = loadConfigFile(file("metrics.yaml", "metrics:\n  enabled: true\n  token: ${METRICS_TOKEN}\n"), {
      METRICS_TOKEN: "t".repeat(32),
    });
    expect(withToken.metrics).toEqual({ enabled: true, token: "t".repeat(32) });
    const apart = loadConfigFile(file("metrics-listen.yaml", "metrics: { enabled: true, listen: { port: 9464 } }\n"));
    expect(apart.metrics).toEqual({ enabled: true, listen: { host: "127.0.0.1", port: 9464 } });
    // Off, a missing token is no matter.
    expect(parseConfig({ metrics: { enabled: false } }, "t").metrics.enabled).toBe(false);
  });

  it.each([
    [
      "on the main address without a token",
      "metrics: { enabled: true }",
      {},
      "metrics.token",
      /required when metrics are served on the main address/,
    ],
    [
      "a token from an unset variable",
      "metrics:\n  enabled: true\n  token: ${METRICS_TOKEN}",
      {},
      "metrics.token",
      /METRICS_TOKEN is not set/,
    ],
    ["a short token", "metrics: { enabled: true, token: short }", {}, "metrics.token", /at least 16 characters/],
    [
      "its listener on the main port",
      "metrics: { enabled: true, listen: { port: 8080 } }",
      {},
      "metrics.listen.port",
      /differ from server.port/,
    ],
    ["a listener without a port", "metrics: { enabled: true, listen: { host: 0.0.0.0 } }", {}, "metrics.listen.port", /./],
  ])("refuses metrics %s", (_name, text, env, expectedPath, reason) => {
    const err = failure(() => loadConfigFile(file("bad-metrics.yaml", `${text}\n`), env));
    expect(err.path).toBe(expectedPath);
    expect(err.message).toMatch(reason);
  });

  it("names every schema problem at once, in an operator's words", () => {
    const text = minimal
      .replace("    protocol: openai\n", "    protocol: openai\n    colour: red\n")
      .replace("{ daily_tokens: 200000, weekly_resets: 1, context_limit: 128000 }", '{ daily_tokens: "lots", weekly_resets: 1 }');
    const err = failure(() => loadConfigFile(file("many.yaml", text), { MAIN_API_KEY: "k" }));
    expect(err.problems).toEqual(
      expect.arrayContaining([
        { path: "providers.main", reason: "unknown key colour" },
        { path: "plans.free.daily_tokens", reason: "must be a number, not a string" },
        { path: "plans.free.context_limit", reason: "required (a number)" },
      ]),
    );
    expect(err.problems).toHaveLength(3);
    expect(err.problems[0]).toEqual({ path: err.path, reason: err.reason });
    expect(err.message).toBe(
      `invalid config ${path.join(dir, "many.yaml")} at ${err.path}: ${err.reason} (and 2 more: \`gateway config check\` lists them)`,
    );
  });

  it("reports unreadable files and broken YAML without a path", () => {
    expect(failure(() => loadConfigFile(path.join(dir, "absent.yaml"))).message).toMatch(/cannot read file \(ENOENT\)/);
    expect(failure(() => loadConfigFile(file("broken.yaml", "models: [unclosed\n"))).message).toMatch(/not valid YAML/);
    expect(failure(() => loadConfigFile(file("list.yaml", "- 1\n- 2\n"))).message).toMatch(/must be a mapping/);
  });

  it("masks secrets when printed", () => {
    const config = parseConfig(
      {
        database: { url: "postgres://u:hunter2@db/x" },
        auth: { jwt_secret: "s".repeat(40) },
        metrics: { enabled: true, token: "m".repeat(24) },
      },
      "t",
    );
    const text = JSON.stringify(maskSecrets(loadConfigFile(file("m.yaml", minimal), { MAIN_API_KEY: "sk-live-123" })));
    expect(text).not.toContain("sk-live-123");
    const masked = JSON.stringify(maskSecrets(config));
    expect(masked).not.toContain("hunter2");
    expect(masked).not.toContain("s".repeat(40));
    expect(masked).not.toContain("m".repeat(24));
  });
});

describe("env interpolation", () => {
  it("substitutes, defaults, escapes and types whole placeholders", () => {
    const env = { A: "x", PORT: "9000", ON: "true" };
    expect(interpolate({ v: "pre-${A}-post", d: "${MISSING:-fallback}", e: "$${A}" }, env)).toEqual({
      v: "pre-x-post",
      d: "fallback",
      e: "${A}",
    });
    expect(interpolate({ port: "${PORT}", flag: "${ON}", text: "p${PORT}" }, env)).toEqual({ port: 9000, flag: true, text: "p9000" });
  });

  it("never lets an env value inject structure", () => {
    expect(interpolate({ k: "${EVIL}" }, { EVIL: "a\nb: c" })).toEqual({ k: "a\nb: c" });
  });
});
