// `encoding_format: "base64"` is the vector's float32 values, little-endian, base64-encoded: what OpenAI sends
// and its SDKs decode. The gateway encodes itself when an upstream only answers floats.

/** A vector as OpenAI's base64 embedding (float32 little-endian); values are rounded to float32. */
export function encodeEmbeddingBase64(vector: readonly number[]): string {
  const bytes = new DataView(new ArrayBuffer(vector.length * 4));
  vector.forEach((value, i) => bytes.setFloat32(i * 4, value, true));
  return Buffer.from(bytes.buffer).toString("base64");
}

/** The inverse of encodeEmbeddingBase64; a byte length that is not a multiple of 4 is rejected. */
export function decodeEmbeddingBase64(encoded: string): number[] {
  const buf = Buffer.from(encoded, "base64");
  if (buf.length % 4 !== 0) throw new RangeError("base64 embedding is not a whole number of float32 values");
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  return Array.from({ length: buf.length / 4 }, (_, i) => view.getFloat32(i * 4, true));
}
