import { Writable } from "node:stream";
import { expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";

// Credentials never reach a log line, should an object holding them ever be logged: the gateway's own keys,
// the providers' keys and a client's own upstream key (its header, and `apiKey` of the provider call options).
it("redacts every credential field and header the gateway knows", () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger("info", sink);
  const headers = {
    authorization: "Bearer secret-1",
    "x-api-key": "secret-2",
    "x-goog-api-key": "secret-3",
    "x-upstream-api-key": "secret-4",
    cookie: "secret-5",
  };
  logger.info({ headers, options: { apiKey: "secret-6", signal: null }, provider: { api_key: "secret-7" } }, "request");
  expect(lines).toHaveLength(1);
  expect(lines[0]).not.toContain("secret-");
  expect(lines[0]).toContain("[redacted]");
});
