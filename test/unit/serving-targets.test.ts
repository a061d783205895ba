import { describe, expect, it } from "vitest";
import { createCatalog } from "../../src/catalog/catalog.js";
import { parseConfig } from "../../src/config/load.js";
import { GatewayError } from "../../src/errors.js";
import { servingTargets } from "../../src/catalog/model-access.js";
import { upstreamToClient, errorClassOf } from "../../src/metering/metered-errors.js";
import { UpstreamError } from "../../src/providers/types.js";

// Which of a model's targets a request may use: those of a protocol the route calls, and with the client's own
// upstream key only those of the first provider that accepts one; and how that key's rejection is reported.

const catalog = createCatalog(
  parseConfig(
    {
      providers: {
        openA: { protocol: "openai", base_url: "http://a.test/v1" },
        openB: { protocol: "openai", base_url: "http://b.test/v1", allow_byok: true },
        claude: { protocol: "anthropic", base_url: "http://c.test", allow_byok: true },
      },
      models: {
        mixed: {
          kind: "chat",
          upstream: "m",
          targets: ["openA", "claude", "openB", { provider: "openB", model: "m2" }, { provider: "claude", model: "m3" }],
        },
        closed: { kind: "chat", upstream: "m", targets: ["openA"] },
      },
    },
    "test",
  ),
);
const model = (id: string) => catalog.get(id)!;
const targetsOf = (m: ReturnType<typeof model>) => m.targets.map((t) => `${t.providerId}:${t.upstreamModel}`);
const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err as GatewayError;
  }
  throw new Error("not refused");
};

describe("servingTargets", () => {
  it("keeps the targets of the route's protocols, in order, and the model itself when nothing is left out", () => {
    expect(targetsOf(servingTargets(model("mixed"), ["openai"], "/v1/chat/completions", false))).toEqual([
      "openA:m",
      "openB:m",
      "openB:m2",
    ]);
    expect(servingTargets(model("mixed"), ["anthropic", "openai"], "/messages", false)).toBe(model("mixed"));
  });

  it("refuses a model none of whose targets the route can call, naming its protocol and the route", () => {
    const err = refusal(() => servingTargets(model("closed"), ["gemini"], "/compatible/v1beta/models/{model}:generateContent", false));
    expect(err).toMatchObject({ status: 400, code: "model_not_supported", param: "model" });
    expect(err.message).toContain("openai protocol");
  });

  it("with the client's own key: only the first opted-in provider's targets, never another provider", () => {
    expect(targetsOf(servingTargets(model("mixed"), ["openai"], "/v1/chat/completions", true))).toEqual(["openB:m", "openB:m2"]);
    expect(targetsOf(servingTargets(model("mixed"), ["anthropic", "openai"], "/messages", true))).toEqual(["claude:m", "claude:m3"]);
    expect(refusal(() => servingTargets(model("closed"), ["openai"], "/v1/chat/completions", true))).toMatchObject({
      status: 400,
      code: "upstream_key_not_accepted",
    });
  });
});

describe("an upstream rejecting the client's own key", () => {
  it.each([401, 403])("%s is the client's 400 with the key's own code, and an invalid request in analytics", (status) => {
    const err = new UpstreamError("status", status);
    expect(upstreamToClient(err, true)).toMatchObject({ status: 400, code: "upstream_key_rejected" });
    expect(errorClassOf(err, true)).toBe("invalid_request");
    // With the operator's key the same answer is the operator's misconfiguration: a 502.
    expect(upstreamToClient(err)).toMatchObject({ status: 502, code: "upstream_error" });
    expect(errorClassOf(err)).toBe("upstream_error");
  });

  it("other failures read the same with or without the client's key", () => {
    for (const err of [new UpstreamError("status", 429), new UpstreamError("status", 500), new UpstreamError("timeout", null)]) {
      expect(upstreamToClient(err, true)).toEqual(upstreamToClient(err));
    }
  });
});
