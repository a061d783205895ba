import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { accessLogger, createLogger } from "../../src/logger.js";

// The access log skips the full logger's redaction and bounding (its fields are the gateway's own): what it
// writes must be the line the full logger writes for the same fields, to the same place, at the same level.

function sink() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { stream, lines };
}

const fields = { req_id: "req_0123", method: "POST", route: "/v1/chat/completions", status: 200, latency_ms: 1.25 };

describe("the access logger", () => {
  it("writes the full logger's line for the same fields, to its destination, with its bindings", () => {
    const { stream, lines } = sink();
    const logger = createLogger("info", stream).child({ component: "http" });
    logger.info(fields, "request");
    accessLogger(logger).info(fields, "request");
    expect(lines).toHaveLength(2);
    const [full, access] = lines.map(({ time, ...rest }) => {
      expect(typeof time).toBe("number");
      return rest;
    });
    expect(access).toEqual(full);
    expect(Object.keys(access!)).toEqual(Object.keys(full!));
    expect(access).toMatchObject({ level: 30, service: "gateway", component: "http", msg: "request", status: 200 });
  });

  it("keeps the logger's level", () => {
    const { stream, lines } = sink();
    const access = accessLogger(createLogger("warn", stream));
    access.info(fields, "request");
    expect(access.isLevelEnabled("info")).toBe(false);
    expect(lines).toEqual([]);
  });
});
