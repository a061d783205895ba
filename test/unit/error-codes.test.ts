import { describe, expect, it } from "vitest";
import { ERROR_CODES, GatewayError, errors, type ErrorCode } from "../../src/errors.js";
import { errorClassOf, upstreamToClient } from "../../src/metering/metered-errors.js";
import { errorCodeOf } from "../../src/metering/metered-errors.js";
import { UpstreamAnswerTooLargeError, UpstreamError } from "../../src/providers/types.js";

// One table of the gateway's error codes (src/errors.ts): the status and type a client gets, and the class the
// request log and the metrics count. Everything that maps a failure reads it.

describe("the error-code table", () => {
  it("gives every code a status a client can get, a type of the envelope, and a class", () => {
    for (const [code, spec] of Object.entries(ERROR_CODES)) {
      expect(spec.status, code).toBeGreaterThanOrEqual(400);
      expect(spec.status, code).toBeLessThan(600);
      expect(code).toMatch(/^[a-z][a-z_]+[a-z]$/);
    }
  });

  it("builds errors from the code alone; a route may only change the status", () => {
    const err = new GatewayError({ code: "insufficient_quota", message: "m" });
    expect(err).toMatchObject({
      status: 429,
      type: "rate_limit_error",
      code: "insufficient_quota",
      param: null,
      errorClass: "quota_exceeded",
    });
    const unprocessable = errors.unprocessable("bad", "state", "invalid_value");
    expect(unprocessable).toMatchObject({
      status: 422,
      type: "invalid_request_error",
      code: "invalid_value",
      errorClass: "invalid_request",
    });
    expect(errors.badRequest("no code given")).toMatchObject({ status: 400, code: "invalid_request" });
  });

  it("maps every upstream failure to a code of the table, and the class follows the code", () => {
    const cases: [UpstreamError, ErrorCode, number][] = [
      [new UpstreamError("connect", null), "upstream_unreachable", 502],
      [new UpstreamError("timeout", null), "upstream_timeout", 504],
      [new UpstreamError("protocol", 200), "upstream_error", 502],
      [new UpstreamError("invalid_output", 200), "upstream_invalid_output", 502],
      [new UpstreamAnswerTooLargeError(10, 200), "upstream_answer_too_large", 502],
      [new UpstreamError("status", 429), "upstream_rate_limited", 429],
      [new UpstreamError("status", 529), "upstream_overloaded", 529],
      [new UpstreamError("status", 400), "upstream_invalid_request", 400],
      [new UpstreamError("status", 413), "upstream_request_too_large", 413],
      [new UpstreamError("status", 503), "upstream_error", 502],
    ];
    for (const [err, code, status] of cases) {
      expect(upstreamToClient(err)).toMatchObject({ code, status });
      expect(errorCodeOf(err)).toBe(code);
      expect(errorClassOf(err)).toBe(ERROR_CODES[code].class);
    }
    expect(errorClassOf(new UpstreamError("connect", null))).toBe("upstream_unreachable");
    expect(errorCodeOf(new UpstreamError("aborted", null))).toBe("client_closed_request");
    expect(errorClassOf(new UpstreamError("aborted", null))).toBe("client_cancelled");
  });

  it("calls anything that is not the gateway's own error internal", () => {
    expect(errorCodeOf(new TypeError("x"))).toBe("internal_error");
    expect(errorClassOf(new TypeError("x"))).toBe("internal");
    expect(errorClassOf(errors.internal())).toBe("internal");
    expect(errorClassOf(new GatewayError({ code: "database_unavailable", message: "db" }))).toBe("unavailable");
  });

  it("never retries a refused output or an answer over the cap on the next target", () => {
    expect(new UpstreamError("invalid_output", 200).retryable).toBe(false);
    expect(new UpstreamAnswerTooLargeError(10, 200).retryable).toBe(false);
    expect(new UpstreamError("protocol", 200).retryable).toBe(true);
  });
});
