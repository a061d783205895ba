import { describe, expect, it } from "vitest";
import { createPasswordHasher } from "../../src/auth/passwords.js";

const { hash: hashPassword, verify: verifyPassword } = createPasswordHasher({ logN: 14, concurrency: 2 });

describe("password hashing", () => {
  it("round-trips and records its parameters", async () => {
    const stored = await hashPassword("correct horse battery");
    expect(stored).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(await verifyPassword("correct horse battery", stored)).toBe(true);
  });

  it("salts every hash", async () => {
    expect(await hashPassword("same password")).not.toBe(await hashPassword("same password"));
  });

  it("rejects a wrong password", async () => {
    const stored = await hashPassword("correct horse battery");
    expect(await verifyPassword("correct horse batterY", stored)).toBe(false);
    expect(await verifyPassword("", stored)).toBe(false);
  });

  it("treats composed and decomposed accents as the same password", async () => {
    const stored = await hashPassword("caf\u00e9-password");
    expect(await verifyPassword("cafe\u0301-password", stored)).toBe(true);
  });

  it("returns false for stored values it did not write", async () => {
    const good = await hashPassword("password123");
    const parts = good.split("$");
    const malformed = [
      "",
      "plaintext",
      "bcrypt$2b$10$abc",
      good.replace("scrypt$", "argon2$"),
      [...parts.slice(0, 5)].join("$"),
      ["scrypt", "16383", ...parts.slice(2)].join("$"),
      ["scrypt", String(1 << 24), ...parts.slice(2)].join("$"),
      ["scrypt", "16384", "0", ...parts.slice(3)].join("$"),
      ["scrypt", "16384", "8", "1", "", parts[5]].join("$"),
      ["scrypt", "16384", "8", "1", parts[4], "AA=="].join("$"),
    ];
    for (const stored of malformed) expect(await verifyPassword("password123", stored), stored).toBe(false);
  });
});
