import http from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { describeError, GatewayConnectionError, isRetryable } from "../../../worker-kit/client/errors.js";
import { createHttpCaller } from "../../../worker-kit/client/http.js";
import { closedPort } from "../../helpers/poll.js";

// A gateway that cannot be reached is named with its URL and what to check, in the one line the worker, the CLI and
// the TUI all show (describeError).

const call = { method: "GET", path: "/health", headers: {}, answer: z.unknown() } as const;

describe("an unreachable gateway", () => {
  it("is named with its URL, the socket's code and the hint", async () => {
    const base = `http://127.0.0.1:${await closedPort()}`;
    const err = await createHttpCaller({ baseUrl: `${base}/` })(call).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayConnectionError);
    expect(err).toMatchObject({ baseUrl: base, reason: "ECONNREFUSED", timedOut: false });
    expect(isRetryable(err)).toBe(true);
    expect(describeError(err)).toBe(
      `cannot reach the gateway at ${base} (ECONNREFUSED): is \`gateway serve\` running there? set --url or GATEWAY_URL`,
    );
  });

  it("never shows a user name or password the URL carried", async () => {
    const refused = (async () => {
      throw new TypeError("fetch failed", { cause: Object.assign(new Error("refused"), { code: "ECONNREFUSED" }) });
    }) as typeof fetch;
    const err = await createHttpCaller({ baseUrl: "http://ops:s3cret@gw.internal:8080", fetch: refused })(call).catch((e: unknown) => e);
    expect(describeError(err)).toMatch(/^cannot reach the gateway at http:\/\/gw\.internal:8080 \(ECONNREFUSED\)/);
    expect(describeError(err)).not.toContain("s3cret");
  });

  it("says that a gateway that took the call did not answer in time, without the hint about serve", async () => {
    const server = http.createServer(() => {});
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const err = await createHttpCaller({ baseUrl: base, timeoutMs: 200 })(call).catch((e: unknown) => e);
      expect(err).toMatchObject({ timedOut: true, retryable: true });
      expect(describeError(err)).toBe(`the gateway at ${base} did not answer (timed out after 200 ms)`);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
