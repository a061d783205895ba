import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CanonicalBase64, isCanonicalBase64 } from "../../src/providers/upstream-images/canonical-base64.js";
import { largeMockPng } from "../../src/mock-upstream/mock-images.js";
import { chunksOf } from "../helpers/image-download.js";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const ascii = (text: string) => Buffer.from(text, "latin1");
/** What the gateway checked before: the text is what Node's encoder writes for what its decoder makes of it. */
const roundTrips = (text: string) => text.length > 0 && Buffer.from(text, "base64").toString("base64") === text;

/** `bytes` copied to `offset` bytes into a larger buffer, so that the checked view starts off a 4-byte boundary. */
function at(offset: number, bytes: Uint8Array): Uint8Array {
  const host = new Uint8Array(bytes.length + 8).fill(0x2a);
  host.set(bytes, offset);
  return host.subarray(offset, offset + bytes.length);
}

describe("isCanonicalBase64", () => {
  it("accepts Node's encoding of any bytes, of every length and at every memory alignment", () => {
    for (let length = 1; length <= 40; length++) {
      const text = Buffer.from(Array.from({ length }, (_, i) => (i * 37 + length) & 0xff)).toString("base64");
      for (let offset = 0; offset < 4; offset++) expect(isCanonicalBase64(at(offset, ascii(text))), `${text} at ${offset}`).toBe(true);
    }
  });

  it("accepts every character of the alphabet at every place", () => {
    const text = ALPHABET.repeat(3);
    for (let offset = 0; offset < 4; offset++) expect(isCanonicalBase64(at(offset, ascii(text)))).toBe(true);
  });

  it("refuses every byte outside the alphabet, at every place of a word and at either end", () => {
    const text = "QUJD".repeat(6);
    for (let byte = 0; byte < 256; byte++) {
      if (ALPHABET.includes(String.fromCharCode(byte))) continue;
      for (const place of [0, 1, 2, 3, 9, 13, text.length - 1]) {
        const bad = ascii(text);
        bad[place] = byte;
        for (let offset = 0; offset < 4; offset++) expect(isCanonicalBase64(at(offset, bad)), `byte ${byte} at ${place}`).toBe(false);
      }
    }
  });

  it("refuses a bad byte at any place of a longer text, read four words a turn and then word by word", () => {
    const text = "QUJD".repeat(13);
    for (let place = 0; place < text.length; place++) {
      for (const byte of [0x00, 0x2d, 0x3d, 0x80, 0xff]) {
        const bad = ascii(text);
        bad[place] = byte;
        for (let offset = 0; offset < 4; offset++) expect(isCanonicalBase64(at(offset, bad)), `byte ${byte} at ${place}`).toBe(false);
      }
    }
  });

  it.each([
    ["the URL-safe alphabet", "-_-_"],
    ["a space", "QUJD QUJD"],
    ["a line break", "QUJD\nQUJD"],
    ["a carriage return and line feed", "QUJD\r\nQUJD"],
    ["a tab", "QUJD\tQUJ="],
    ["a trailing newline", "QUJD\n"],
    ["missing padding", "QUI"],
    ["missing padding of a whole group", "QQ"],
    ["extra padding", "QUI=="],
    ["a whole group of padding", "QUJD===="],
    ["three pads", "Q==="],
    ["padding only", "===="],
    ["padding in the middle", "QQ==QUJD"],
    ["one pad in the middle", "QUI=QUJD"],
    ["a stray bit under one pad", "QUJ="],
    ["stray bits under two pads", "QR=="],
    ["the highest stray bit under two pads", "QY=="],
    ["an empty text", ""],
  ])("refuses %s", (_, text) => {
    expect(roundTrips(text), "Node's decoder and encoder disagree").toBe(false);
    expect(isCanonicalBase64(ascii(text))).toBe(false);
  });

  it("accepts the padded ends that carry no stray bits", () => {
    for (const text of ["QQ==", "QUI=", "QUJD", "AA==", "AAA=", "////", "+/+/"]) {
      expect(roundTrips(text)).toBe(true);
      expect(isCanonicalBase64(ascii(text))).toBe(true);
    }
  });

  it("agrees with Node's decode and encode on any text", () => {
    // Characters that are near misses: the alphabet, padding, the URL-safe pair, whitespace, and beyond ASCII.
    const chars = fc.constantFrom(..."ABCQRYZaz09+/=-_ \n\tÁéŁĀ".split(""));
    fc.assert(
      fc.property(fc.array(chars, { maxLength: 24 }), (list) => {
        const text = list.join("");
        expect(CanonicalBase64.ofText(text) !== null).toBe(roundTrips(text));
      }),
      { numRuns: 5000 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat(), fc.constantFrom(..."=-_ \nA".split("")), (bytes, place, char) => {
        const text = Buffer.from(bytes).toString("base64");
        const edited = text.slice(0, place % (text.length + 1)) + char + text.slice(place % (text.length + 1));
        expect(CanonicalBase64.ofText(text) !== null).toBe(roundTrips(text));
        expect(CanonicalBase64.ofText(edited) !== null).toBe(roundTrips(edited));
      }),
      { numRuns: 3000 },
    );
  });

  it("checks a 1 MiB image's base64 whole: a bad byte anywhere refuses it", () => {
    const text = ascii(largeMockPng().toString("base64"));
    expect(isCanonicalBase64(text)).toBe(true);
    for (const place of [0, 1, 2, 3, text.length >> 1, text.length - 5, text.length - 4, text.length - 3]) {
      const bad = Buffer.from(text);
      bad[place] = 0x0a;
      expect(isCanonicalBase64(bad), `newline at ${place}`).toBe(false);
    }
  });
});

describe("CanonicalBase64", () => {
  it("checks text by its UTF-8 bytes: a character beyond ASCII is refused, never read by its low byte", () => {
    // Node's decoder reads "Ł" (U+0141) as "A" (0x41): this text decodes to the bytes of "QUJA".
    expect(Buffer.from("QUJŁ", "base64").equals(Buffer.from("QUJA", "base64"))).toBe(true);
    expect(CanonicalBase64.ofText("QUJŁ")).toBeNull();
    expect(CanonicalBase64.ofText("QUJA")).not.toBeNull();
  });

  it("knows its size, and decodes any range of it exactly, only from the groups that hold it", () => {
    for (let length = 1; length <= 20; length++) {
      const bytes = Buffer.from(Array.from({ length }, (_, i) => (i * 91 + 7) & 0xff));
      const base64 = CanonicalBase64.ofText(bytes.toString("base64"))!;
      expect(base64.size).toBe(length);
      expect(base64.decode().equals(bytes)).toBe(true);
      for (let from = 0; from <= length; from++) {
        for (let to = from; to <= length; to++)
          expect(base64.decode(from, to).equals(bytes.subarray(from, to)), `${from}-${to} of ${length}`).toBe(true);
      }
    }
  });

  it("encodes bytes that arrive in pieces of any size as Node encodes them whole; nothing at all is null", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 9 }), { maxLength: 8 }), async (pieces) => {
        const whole = Buffer.concat(pieces);
        const base64 = await CanonicalBase64.encode(chunksOf(...pieces));
        if (whole.length === 0) expect(base64).toBeNull();
        else {
          expect(base64!.text()).toBe(whole.toString("base64"));
          expect(isCanonicalBase64(base64!.bytes)).toBe(true);
          expect(base64!.decode().equals(whole)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("keeps the bytes it was given, and gives its text back", () => {
    const bytes = ascii("iVBORw0KGgo=");
    const base64 = CanonicalBase64.ofBytes(bytes)!;
    expect(base64.bytes).toBe(bytes);
    expect(base64.text()).toBe("iVBORw0KGgo=");
    expect(CanonicalBase64.ofBytes(ascii("iVBORw0KGgo"))).toBeNull();
  });
});
