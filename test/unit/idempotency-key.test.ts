import { describe, expect, it } from "vitest";
import { parseIdempotencyKey } from "../../src/balances/idempotency.js";
import { GatewayError } from "../../src/errors.js";

// The Idempotency-Key's form (docs/api.md, "Idempotency of money calls"): 1 to 255 printable ASCII characters, bare
// or as the IETF draft's structured-field string, which stands for the same key.
describe("parseIdempotencyKey", () => {
  it.each([
    ["8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324"],
    ['"8e03978e-40d5-43e8-bc93-6894a57f9324"', "8e03978e-40d5-43e8-bc93-6894a57f9324"],
    ['"say \\"hi\\" \\\\ bye"', 'say "hi" \\ bye'],
    ["with inner spaces", "with inner spaces"],
    // Not a well-formed structured-field string: taken as it is.
    ['"unbalanced', '"unbalanced'],
    ['"a"b"', '"a"b"'],
    ["k".repeat(255), "k".repeat(255)],
  ])("takes %j as the key %j", (raw, key) => {
    expect(parseIdempotencyKey(raw, "Idempotency-Key")).toBe(key);
  });

  it.each([[""], ['""'], ["k".repeat(256)], [`"${"k".repeat(256)}"`], ["tab\there"], ["caf\u00e9"], ["line\nbreak"], ["\u0000"]])(
    "refuses %j with a 400 naming where it came from",
    (raw) => {
      let err: unknown;
      try {
        parseIdempotencyKey(raw, "--idempotency-key");
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ status: 400, code: "invalid_value", param: "--idempotency-key" });
    },
  );
});
