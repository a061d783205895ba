import { crc32, deflateSync } from "node:zlib";

/**
 * The mock's images: one real 1×1 picture per format the gateway delivers (PNG, JPEG, WebP, GIF), each a
 * complete file a decoder renders, not just magic numbers, plus formats it must refuse (BMP, SVG). Built from
 * their specifications here, so that no binary fixture needs a provenance, and shared with the tests that check
 * the gateway's delivery byte for byte.
 */

export const MOCK_IMAGE_FORMATS = ["png", "jpeg", "webp", "gif"] as const;
export type MockImageFormat = (typeof MOCK_IMAGE_FORMATS)[number];

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/**
 * 1×1 truecolour PNG: IHDR (8-bit RGB), one scanline (filter byte 0 + the pixel) deflated in IDAT, IEND. With
 * `padding`, a private ancillary chunk of that many bytes (which decoders skip) makes the file as large as a real
 * picture, for the benchmark.
 */
function png(rgb: [number, number, number], padding = 0): Buffer {
  const header = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", header),
    ...(padding > 0 ? [pngChunk("mkPd", Buffer.alloc(padding, 0x5a))] : []),
    pngChunk("IDAT", deflateSync(Buffer.from([0, ...rgb]))),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A 1×1 PNG of one colour: the pictures the Gemini mock draws, a colour per answer (./gemini-images.ts). */
export const solidPng = (rgb: [number, number, number]): Buffer => png(rgb);

/** The model whose PNGs are 1 MiB (docs/mock-upstream.md): what `npm run bench` delivers through the gateway. */
export const LARGE_IMAGE_MODEL = "mock-image-large";
const LARGE_PNG_BYTES = 1 << 20;
let largePng: Buffer | undefined;

/** A 1 MiB PNG of the same pixel as MOCK_IMAGES.png, built on first use. */
export const largeMockPng = (): Buffer =>
  // The padding chunk adds its length, type and CRC (12 bytes) to the 1×1 file.
  (largePng ??= png([0x33, 0x66, 0xcc], LARGE_PNG_BYTES - png([0x33, 0x66, 0xcc]).length - 12));

/**
 * 1×1 greyscale baseline JPEG (one 8×8 block, mid grey): Huffman tables of a single 1-bit code each, so the
 * scan is DC "category 0" then AC "end of block", the bits 00 padded with ones (0x3f).
 */
const JPEG = Buffer.from([
  ...[0xff, 0xd8], // SOI
  ...[0xff, 0xdb, 0x00, 0x43, 0x00, ...new Array<number>(64).fill(1)], // DQT: table 0, all ones
  ...[0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x01, 0x00, 0x01, 0x01, 0x01, 0x11, 0x00], // SOF0: 8-bit, 1×1, one component
  ...[0xff, 0xc4, 0x00, 0x14, 0x00, 0x01, ...new Array<number>(15).fill(0), 0x00], // DHT: DC table 0, code "0" → 0
  ...[0xff, 0xc4, 0x00, 0x14, 0x10, 0x01, ...new Array<number>(15).fill(0), 0x00], // DHT: AC table 0, code "0" → EOB
  ...[0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00], // SOS: component 1 with tables 0/0
  0x3f,
  ...[0xff, 0xd9], // EOI
]);

/** 1×1 lossless WebP (RIFF "WEBP" with a VP8L chunk): the image browsers are probed with for lossless support. */
const WEBP = Buffer.from("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==", "base64");

/** 1×1 GIF89a: a two-colour global table, one image whose LZW data (minimum code size 2) is clear, 0, end. */
const GIF = Buffer.from([
  ...[0x47, 0x49, 0x46, 0x38, 0x39, 0x61], // "GIF89a"
  ...[0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00], // 1×1, global colour table of 2 entries
  ...[0x33, 0x66, 0xcc, 0x00, 0x00, 0x00],
  ...[0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00], // image descriptor
  ...[0x02, 0x02, 0x44, 0x01, 0x00], // LZW: minimum code size 2, one sub-block of 2 bytes, terminator
  0x3b, // trailer
]);

/** 1×1 24-bit BMP: a picture, but not one the gateway delivers. */
const BMP = Buffer.concat([
  Buffer.from("BM", "latin1"),
  Buffer.from([58, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0]), // file size 58, pixel data at 54
  Buffer.from([40, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 24, 0, 0, 0, 0, 0, 4, 0, 0, 0]), // BITMAPINFOHEADER: 1×1, 24 bit
  Buffer.alloc(16), // resolution and palette fields
  Buffer.from([0xcc, 0x66, 0x33, 0x00]), // one BGR pixel, padded to 4 bytes
]);

/** SVG is text that can carry scripts: a client must never get it as an image. */
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><rect width="1" height="1"/></svg>');

export const MOCK_IMAGES: Readonly<Record<MockImageFormat | "bmp" | "svg", Buffer>> = {
  png: png([0x33, 0x66, 0xcc]),
  jpeg: JPEG,
  webp: WEBP,
  gif: GIF,
  bmp: BMP,
  svg: SVG,
};
