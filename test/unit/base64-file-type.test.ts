import fc from "fast-check";
import { fileTypeFromBuffer } from "file-type";
import { describe, expect, it, vi } from "vitest";
import { CanonicalBase64 } from "../../src/providers/upstream-images/canonical-base64.js";
import { fileTypeOfBase64 } from "../../src/providers/upstream-images/base64-file-type.js";
import { largeMockPng, MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";

const base64Of = (bytes: Uint8Array) => CanonicalBase64.ofText(Buffer.from(bytes).toString("base64"))!;

/** A PNG chunk with a zero CRC (sniffing reads lengths and types, never checks CRCs). */
function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  return Buffer.concat([length, Buffer.from(type, "latin1"), data, Buffer.alloc(4)]);
}

/** The large PNG made animated: an acTL chunk after its megabyte of padding, just before the image data. */
function animatedAfterPadding(): Buffer {
  const png = largeMockPng();
  const idat = png.indexOf("IDAT") - 4;
  return Buffer.concat([png.subarray(0, idat), chunk("acTL", Buffer.alloc(8)), png.subarray(idat)]);
}

async function expectSameType(bytes: Uint8Array): Promise<void> {
  expect(await fileTypeOfBase64(base64Of(bytes))).toEqual(await fileTypeFromBuffer(bytes));
}

describe("fileTypeOfBase64", () => {
  it("types every mock image as file-type does from the decoded bytes", async () => {
    for (const bytes of Object.values(MOCK_IMAGES)) await expectSameType(bytes);
    expect((await fileTypeOfBase64(base64Of(MOCK_IMAGES.png)))?.ext).toBe("png");
    expect((await fileTypeOfBase64(base64Of(MOCK_IMAGES.bmp)))?.ext).toBe("bmp");
  });

  it("walks a PNG's chunks to its image data: an acTL chunk a megabyte in makes it animated", async () => {
    expect((await fileTypeOfBase64(base64Of(largeMockPng())))?.ext).toBe("png");
    const animated = animatedAfterPadding();
    expect((await fileTypeFromBuffer(animated))?.ext).toBe("apng");
    expect((await fileTypeOfBase64(base64Of(animated)))?.ext).toBe("apng");
  });

  it("decodes only the bytes it reads: a few dozen of a 1 MiB PNG", async () => {
    const base64 = base64Of(largeMockPng());
    const decode = vi.spyOn(base64, "decode");
    await fileTypeOfBase64(base64);
    const decoded = decode.mock.calls.reduce((sum, [from, to]) => sum + (to! - from!), 0);
    expect(decode).toHaveBeenCalled();
    expect(decoded).toBeLessThan(100);
  });

  it("answers nothing for a file cut short, a single byte, and bytes of no known type, as file-type does", async () => {
    await expectSameType(MOCK_IMAGES.png.subarray(0, 20));
    await expectSameType(largeMockPng().subarray(0, 5000));
    await expectSameType(MOCK_IMAGES.jpeg.subarray(0, 2));
    await expectSameType(Buffer.from([0x89]));
    await expectSameType(Buffer.from("just some text, not a picture"));
    expect(await fileTypeOfBase64(base64Of(Buffer.from([0x89])))).toBeUndefined();
  });

  it("agrees with file-type over the decoded bytes on any bytes after a known start", async () => {
    const starts = Object.values(MOCK_IMAGES).map((bytes) => [...bytes.subarray(0, 12)]);
    await fc.assert(
      // Empty bytes have no base64 (canonical base64 is never empty).
      fc.asyncProperty(fc.constantFrom(...starts, []), fc.uint8Array({ minLength: 1, maxLength: 80 }), async (start, rest) => {
        await expectSameType(Buffer.concat([Buffer.from(start), rest]));
      }),
      { numRuns: 300 },
    );
  });
});
