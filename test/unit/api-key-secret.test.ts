import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { API_KEY_LENGTH, apiKeyPrefix, generateApiKey, hashApiKey, looksLikeApiKey } from "../../src/auth/api-key-secret.js";

describe("api key secrets", () => {
  it("generates gw_ + 43 base64url characters", () => {
    const { key } = generateApiKey();
    expect(key).toMatch(/^gw_[A-Za-z0-9_-]{43}$/);
    expect(key).toHaveLength(API_KEY_LENGTH);
    expect(looksLikeApiKey(key)).toBe(true);
  });

  it("never repeats a key", () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey().key));
    expect(keys.size).toBe(1000);
  });

  it("shows the first 12 characters as the prefix", () => {
    const { key, prefix } = generateApiKey();
    expect(prefix).toHaveLength(12);
    expect(key.startsWith(prefix)).toBe(true);
    expect(apiKeyPrefix("gw_AbCdEfGhIjKl")).toBe("gw_AbCdEfGhI");
  });

  it("stores a stable sha256 hex of the secret", () => {
    const { key, hash } = generateApiKey();
    expect(hash).toBe(hashApiKey(key));
    expect(hash).toBe(createHash("sha256").update(key).digest("hex"));
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("rejects strings that are not keys before any lookup", () => {
    const { key } = generateApiKey();
    const bad = [
      "",
      "gw_",
      "gw_short",
      key.slice(0, -1),
      `${key}A`,
      key.replace("gw_", "sk_"),
      key.replace("gw_", "GW_"),
      `${key.slice(0, 10)}+${key.slice(11)}`,
      `${key.slice(0, 10)} ${key.slice(11)}`,
      `${key.slice(0, 10)}é${key.slice(11)}`,
      ` ${key.slice(1)}`,
      "eyJhbGciOiJIUzI1NiJ9.e30.signature-signature-signature",
    ];
    for (const value of bad) expect(looksLikeApiKey(value), value).toBe(false);
  });
});
