import { describe, expect, it } from "vitest";
import { decodeEmbeddingBase64, encodeEmbeddingBase64 } from "../../src/providers/openai/embedding-base64.js";

/** The expected bytes, worked out independently of the code under test. */
function float32le(values: number[]): Buffer {
  const view = new DataView(new ArrayBuffer(values.length * 4));
  values.forEach((v, i) => view.setFloat32(i * 4, v, true));
  return Buffer.from(view.buffer);
}

describe("encodeEmbeddingBase64", () => {
  it("writes float32 little-endian values", () => {
    expect(Buffer.from(encodeEmbeddingBase64([1, -2.5, 0.1]), "base64")).toEqual(float32le([1, -2.5, 0.1]));
    // 1.0f = 0x3F800000, -2.5f = 0xC0200000, 0.1f = 0x3DCCCCCD, each stored low byte first.
    expect(Buffer.from(encodeEmbeddingBase64([1, -2.5, 0.1]), "base64").toString("hex")).toBe("0000803f000020c0cdcccc3d");
  });

  it("matches a fixed literal", () => {
    expect(encodeEmbeddingBase64([1, -2.5])).toBe("AACAPwAAIMA=");
    expect(encodeEmbeddingBase64([])).toBe("");
  });

  it("round-trips through its inverse at float32 precision", () => {
    const vector = [0.0123, -0.98765, 3.4e38, -1e-40, 0];
    expect(decodeEmbeddingBase64(encodeEmbeddingBase64(vector))).toEqual(vector.map(Math.fround));
    expect(decodeEmbeddingBase64("AACAPwAAIMA=")).toEqual([1, -2.5]);
  });

  it("rejects a byte length that is not whole float32 values", () => {
    expect(() => decodeEmbeddingBase64(Buffer.from([1, 2, 3]).toString("base64"))).toThrow(RangeError);
  });
});
