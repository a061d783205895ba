// Canonical base64 (RFC 4648 §4: the standard alphabet, padded, nothing else), proven so in one pass over its bytes
// and decoded only where it is read. Upstream images arrive as megabytes of base64 that the gateway hands on as
// they came: it has to prove the encoding strict and read the image's first bytes for its type, never to decode
// the whole image or encode it again (docs/performance.md, "2026-11-28 (issue 30): images").

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const PAD = 0x3d; // "="

/** Each byte's 6-bit value in the alphabet, 64 for every other byte. */
const VALUE = new Uint8Array(256).fill(64);
for (let i = 0; i < ALPHABET.length; i++) VALUE[ALPHABET.charCodeAt(i)] = i;

/**
 * 1 when either byte of a 16-bit word is outside the alphabet (either byte order: the answer is the same). The
 * check reads the text as 32-bit words, four a turn, and looks each half up here. Timed on the 1.4 MB of a 1 MiB
 * image inside a gateway under the image benchmark (two runs): 0.7 and 1.7 ms, where one word a turn took 1.8 and
 * 2.3 ms, 16-bit words 2.1 and 3.8 ms, and a lookup per byte 4.4 and 7.5 ms. 64 KiB, built once.
 */
const BAD_PAIR = new Uint8Array(65536);
for (let w = 0; w < 65536; w++) BAD_PAIR[w] = VALUE[w & 0xff] === 64 || VALUE[w >>> 8] === 64 ? 1 : 0;

/** Whether bytes[start, end) are all in the alphabet. */
function inAlphabet(bytes: Uint8Array, start: number, end: number): boolean {
  let i = start;
  // A 32-bit view must start at a multiple of 4 of its memory: the bytes before that one by one.
  for (; i < end && (bytes.byteOffset + i) % 4 !== 0; i++) if (VALUE[bytes[i]!] === 64) return false;
  const count = end - i >= 4 ? (end - i) >>> 2 : 0;
  if (count > 0) {
    // Int32Array: its words are int32 values for V8, which a Uint32Array's above 2^31 are not.
    const words = new Int32Array(bytes.buffer, bytes.byteOffset + i, count);
    let bad = 0;
    let k = 0;
    // No early exit: a branch per turn costs more than reading the rest of an invalid text, which is rare.
    for (; k + 4 <= count; k += 4) {
      const a = words[k]!;
      const b = words[k + 1]!;
      const c = words[k + 2]!;
      const d = words[k + 3]!;
      bad |=
        BAD_PAIR[a & 0xffff]! |
        BAD_PAIR[a >>> 16]! |
        BAD_PAIR[b & 0xffff]! |
        BAD_PAIR[b >>> 16]! |
        BAD_PAIR[c & 0xffff]! |
        BAD_PAIR[c >>> 16]! |
        BAD_PAIR[d & 0xffff]! |
        BAD_PAIR[d >>> 16]!;
    }
    for (; k < count; k++) bad |= BAD_PAIR[words[k]! & 0xffff]! | BAD_PAIR[words[k]! >>> 16]!;
    if (bad !== 0) return false;
  }
  for (i += count * 4; i < end; i++) if (VALUE[bytes[i]!] === 64) return false;
  return true;
}

/** How many "=" end canonical-looking base64 of this length: the last two bytes decide; 3 is never canonical. */
function paddingOf(bytes: Uint8Array): number {
  const n = bytes.length;
  return bytes[n - 1] !== PAD ? 0 : bytes[n - 2] !== PAD ? 1 : 2;
}

/**
 * Whether `bytes` are canonical base64: the only text that Node's encoder writes for the bytes it decodes to. That
 * is a length that is a non-zero multiple of 4, only alphabet characters, then at most two "=", and zero in the
 * bits of the last character that go beyond the last byte. Node's own decoder accepts far more (whitespace,
 * characters outside the alphabet, which it skips, the URL-safe alphabet, missing padding, stray bits), so its
 * output proves nothing; before this check the gateway proved it by encoding the bytes again and comparing.
 */
export function isCanonicalBase64(bytes: Uint8Array): boolean {
  const length = bytes.length;
  if (length === 0 || length % 4 !== 0) return false;
  const padding = paddingOf(bytes);
  const data = length - padding;
  // A third "=" is the last data character here, outside the alphabet.
  if (!inAlphabet(bytes, 0, data)) return false;
  // One "=": the last character's low 2 bits are beyond the last byte; two: its low 4 bits.
  return padding === 0 || (VALUE[bytes[data - 1]!]! & (padding === 1 ? 0x03 : 0x0f)) === 0;
}

/** Node's base64 of `bytes`, as ASCII bytes. */
const encoded = (bytes: Buffer): Buffer => Buffer.from(bytes.toString("base64"), "latin1");

/**
 * Canonical base64, held as the bytes it arrived in. Only its own functions make one: ofBytes and ofText after the
 * check, encode from Node's encoder.
 */
export class CanonicalBase64 {
  /** How many bytes it decodes to. */
  readonly size: number;

  private constructor(readonly bytes: Uint8Array) {
    this.size = (bytes.length / 4) * 3 - paddingOf(bytes);
  }

  /** `bytes` as canonical base64, or null when they are not. They are kept, not copied. */
  static ofBytes(bytes: Uint8Array): CanonicalBase64 | null {
    return isCanonicalBase64(bytes) ? new CanonicalBase64(bytes) : null;
  }

  /**
   * `text` as canonical base64, or null. Its UTF-8 bytes are checked: any character beyond ASCII becomes bytes
   * outside the alphabet (latin1 would not do: it keeps only the low byte of a character, so "Ł" would read "A").
   */
  static ofText(text: string): CanonicalBase64 | null {
    return CanonicalBase64.ofBytes(Buffer.from(text, "utf8"));
  }

  /**
   * The base64 of bytes that arrive in pieces, encoded piece by piece as they come, so the bytes are never held
   * whole; null when none came. Node's encoder writes canonical base64, so nothing is checked. A piece is encoded up
   * to its last whole 3 bytes; the 1 or 2 left over go in front of the next.
   */
  static async encode(chunks: AsyncIterable<Uint8Array>): Promise<CanonicalBase64 | null> {
    const parts: Buffer[] = [];
    let left: Buffer = Buffer.alloc(0);
    for await (const chunk of chunks) {
      let bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
      if (left.length > 0) {
        const taken = Math.min(3 - left.length, bytes.length);
        left = Buffer.concat([left, bytes.subarray(0, taken)]);
        bytes = bytes.subarray(taken);
        if (left.length < 3) continue;
        parts.push(encoded(left));
      }
      const whole = bytes.length - (bytes.length % 3);
      if (whole > 0) parts.push(encoded(bytes.subarray(0, whole)));
      // Copied: the piece's buffer is its producer's.
      left = Buffer.from(bytes.subarray(whole));
    }
    if (left.length > 0) parts.push(encoded(left));
    return parts.length === 0 ? null : new CanonicalBase64(Buffer.concat(parts));
  }

  /** The decoded bytes [from, to), 0 <= from <= to <= size: only the 4-character groups that hold them are decoded. */
  decode(from = 0, to = this.size): Buffer {
    const first = Math.floor(from / 3);
    const groups = this.bytes.subarray(first * 4, Math.ceil(to / 3) * 4);
    const decoded = Buffer.from(Buffer.from(groups.buffer, groups.byteOffset, groups.length).toString("latin1"), "base64");
    return decoded.subarray(from - first * 3, to - first * 3);
  }

  /** The base64 as a string (ASCII, so latin1 is exact). */
  text(): string {
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.length).toString("latin1");
  }
}
