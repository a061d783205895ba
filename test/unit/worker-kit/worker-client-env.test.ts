import { afterEach, describe, expect, it, vi } from "vitest";
import { createWorkerClient } from "../../../worker-kit/client/worker-client.js";

// A worker compiled with a default tsconfig has no `process` (no Node types): the client reads the gateway's url
// and the bot token from the environment itself when the options leave them out (docs/worker-kit.md, "Package").

/** A fetch that answers an empty claim and records the url and authorization of each call. */
function recordingFetch() {
  const sent: { url: string; authorization: string | null }[] = [];
  const fetch = (async (url: URL | string, init?: RequestInit) => {
    sent.push({ url: String(url), authorization: new Headers(init?.headers).get("authorization") });
    return new Response(JSON.stringify({ jobs: [] }), { status: 200, headers: { "content-type": "application/json" } });
  }) as typeof globalThis.fetch;
  return { fetch, sent };
}

const claim = { limit: 1, lease_seconds: 60, worker_id: "w" };

describe("createWorkerClient's settings", () => {
  afterEach(() => vi.unstubAllEnvs());

  it("reads GATEWAY_URL and SUPPORT_BOT_TOKEN when the options leave them out", async () => {
    vi.stubEnv("GATEWAY_URL", "http://gw.test:9000/");
    vi.stubEnv("SUPPORT_BOT_TOKEN", "from-env");
    const { fetch, sent } = recordingFetch();
    await createWorkerClient({ fetch }).claim(claim);
    expect(sent).toEqual([{ url: "http://gw.test:9000/api/v1/internal/support/assistant/jobs/claim", authorization: "Bearer from-env" }]);
  });

  it("prefers the options, and defaults the url to the local gateway", async () => {
    vi.stubEnv("GATEWAY_URL", undefined);
    vi.stubEnv("SUPPORT_BOT_TOKEN", "from-env");
    const { fetch, sent } = recordingFetch();
    await createWorkerClient({ fetch, botToken: "given" }).claim(claim);
    await createWorkerClient({ fetch, baseUrl: "http://other.test" }).claim(claim);
    expect(sent.map((s) => [s.url.replace(/\/api\/.*$/, ""), s.authorization])).toEqual([
      ["http://127.0.0.1:8080", "Bearer given"],
      ["http://other.test", "Bearer from-env"],
    ]);
  });

  it("refuses to start without a bot token, naming where it looked", () => {
    vi.stubEnv("SUPPORT_BOT_TOKEN", "");
    expect(() => createWorkerClient({ baseUrl: "http://gw.test" })).toThrow(/botToken: not given, and SUPPORT_BOT_TOKEN is not set/);
  });
});
