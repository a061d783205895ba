import { errors as undiciErrors } from "undici";
import { describe, expect, it } from "vitest";
import { attemptFailureFields, failureHint } from "../../src/metering/attempt-log.js";
import { networkFailureOf } from "../../src/providers/network-failure.js";
import { UpstreamError, type Target } from "../../src/providers/types.js";
import { testConfig } from "../helpers/gateway-app.js";

// The kinds of network failure the operator's log tells apart, and the fields of a failed attempt's line.

const systemError = (code: string) => Object.assign(new Error(`connect ${code} 10.0.0.1:443`), { code });

describe("networkFailureOf", () => {
  it.each([
    ["ECONNREFUSED", "connection_refused"],
    ["ENOTFOUND", "dns"],
    ["EAI_AGAIN", "dns"],
    ["ECONNRESET", "connection_reset"],
    ["EHOSTUNREACH", "network_unreachable"],
    ["ERR_SSL_WRONG_VERSION_NUMBER", "tls"],
    ["CERT_HAS_EXPIRED", "tls"],
    ["DEPTH_ZERO_SELF_SIGNED_CERT", "tls"],
    ["UNABLE_TO_VERIFY_LEAF_SIGNATURE", "tls"],
    ["ERR_TLS_CERT_ALTNAME_INVALID", "tls"],
    ["EWHATEVER", "other"],
  ])("%s is %s", (code, kind) => {
    expect(networkFailureOf(systemError(code))).toBe(kind);
  });

  it("reads undici's own errors and a wrapped cause", () => {
    expect(networkFailureOf(new undiciErrors.SocketError("other side closed"))).toBe("connection_reset");
    expect(networkFailureOf(new undiciErrors.ConnectTimeoutError())).toBe("connect_timeout");
    expect(networkFailureOf(new undiciErrors.HeadersTimeoutError())).toBe("first_byte_timeout");
    expect(networkFailureOf(new undiciErrors.BodyTimeoutError())).toBe("idle_timeout");
    expect(networkFailureOf(new Error("fetch failed", { cause: systemError("ENOTFOUND") }))).toBe("dns");
    expect(networkFailureOf("not an error")).toBe("other");
  });
});

describe("a failed attempt's log fields", () => {
  const provider = testConfig({
    providers: { p: { protocol: "openai", base_url: "https://user:secret@api.example.test:8443/v1?key=sk-in-query", api_key: "sk-p" } },
    models: { m: { kind: "chat", upstream: "up-m", targets: ["p"] } },
  }).providers.p!;
  const target: Target = { providerId: "p", provider, upstreamModel: "up-m" };
  const ctx = { requestId: "req_1", modelId: "m", attempt: 1, next: null, byok: false };

  it("names the host only: no userinfo, path or query", () => {
    const fields = attemptFailureFields(new UpstreamError("connect", null, {}, "connection_refused"), target, ctx);
    expect(fields).toMatchObject({ upstream_host: "api.example.test:8443", error_class: "connection_refused", fallback: false });
    expect(JSON.stringify(fields)).not.toMatch(/secret|sk-/);
  });

  it("tells a wrong base_url, a rejected key and an outage apart", () => {
    const hints = [
      failureHint(new UpstreamError("connect", null, {}, "dns"), false),
      failureHint(new UpstreamError("connect", null, {}, "connection_refused"), false),
      failureHint(new UpstreamError("status", 404), false),
      failureHint(new UpstreamError("status", 401), false),
      failureHint(new UpstreamError("status", 503), false),
    ];
    expect(new Set(hints).size).toBe(hints.length);
    expect(hints[0]).toContain("base_url");
    expect(hints[3]).toContain("api_key");
    expect(hints[4]).toContain("outage");
    expect(failureHint(new UpstreamError("status", 401), true)).toContain("client's own");
  });
});
