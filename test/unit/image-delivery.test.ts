import { describe, expect, it } from "vitest";
import { upstreamToClient } from "../../src/metering/metered-errors.js";
import {
  deliverImage,
  ImageDeliveryError,
  type ImageRejection,
  type UpstreamImage,
} from "../../src/providers/upstream-images/image-delivery.js";
import { MOCK_IMAGE_FORMATS, MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { UpstreamError } from "../../src/providers/types.js";
import { chunksOf, downloader } from "../helpers/image-download.js";

const signal = new AbortController().signal;
const noDownload = downloader(() => Promise.reject(new Error("no download expected")));
const b64 = (bytes: Buffer) => bytes.toString("base64");
const PNG = MOCK_IMAGES.png;

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/** `text` (padded) with an unused low bit of its last character set: Node decodes it to the same bytes. */
function strayBits(text: string): string {
  const at = text.replace(/=+$/, "").length - 1;
  return text.slice(0, at) + ALPHABET[ALPHABET.indexOf(text[at]!) | 1] + text.slice(at + 1);
}

/** A downloader serving `bytes` (with a lying content type), recording the URLs it was asked for. */
function fakeDownload(bytes: Buffer, contentType: string | null = "image/png") {
  const asked: string[] = [];
  const download = downloader((url) => {
    asked.push(url);
    return Promise.resolve({ bytes, contentType });
  });
  return { asked, download };
}

async function refusal(image: UpstreamImage, download = noDownload): Promise<ImageDeliveryError> {
  const err: unknown = await deliverImage(image, "url", { download, signal }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ImageDeliveryError);
  return err as ImageDeliveryError;
}

async function expectRefused(image: UpstreamImage, reason: ImageRejection, download = noDownload): Promise<void> {
  expect((await refusal(image, download)).reason).toBe(reason);
}

describe("deliverImage: base64 from the upstream", () => {
  it.each(MOCK_IMAGE_FORMATS)("gives a %s image as a data: URI typed by its bytes, or as plain base64", async (format) => {
    const bytes = MOCK_IMAGES[format];
    const asUrl = await deliverImage({ b64_json: b64(bytes) }, "url", { download: noDownload, signal });
    expect(asUrl).toEqual({ url: `data:image/${format};base64,${b64(bytes)}` });
    const asB64 = await deliverImage({ b64_json: b64(bytes) }, "b64_json", { download: noDownload, signal });
    expect(asB64).toEqual({ b64_json: b64(bytes) });
    // Byte-exact: what the client decodes is what the upstream encoded.
    expect(Buffer.from(asB64.b64_json!, "base64").equals(bytes)).toBe(true);
    expect(Buffer.from(asUrl.url!.split(",")[1]!, "base64").equals(bytes)).toBe(true);
  });

  it("keeps revised_prompt, drops a null one", async () => {
    const deps = { download: noDownload, signal };
    expect(await deliverImage({ b64_json: b64(PNG), revised_prompt: "a cat" }, "b64_json", deps)).toEqual({
      b64_json: b64(PNG),
      revised_prompt: "a cat",
    });
    expect(await deliverImage({ b64_json: b64(PNG), revised_prompt: null }, "b64_json", deps)).toEqual({ b64_json: b64(PNG) });
  });

  it("prefers base64 over a link when the upstream sent both", async () => {
    const { asked, download } = fakeDownload(MOCK_IMAGES.gif);
    const out = await deliverImage({ b64_json: b64(PNG), url: "https://cdn.example/x.gif" }, "url", { download, signal });
    expect(out.url).toMatch(/^data:image\/png;base64,/);
    expect(asked).toEqual([]);
  });

  const canonical = b64(PNG);
  it.each([
    ["characters outside the alphabet", canonical.slice(0, 8) + "*" + canonical.slice(8)],
    [
      "the URL-safe alphabet",
      b64(Buffer.from([0xfb, 0xff, 0xbf, ...PNG]))
        .replace(/\+/g, "-")
        .replace(/\//g, "_"),
    ],
    ["a line break", canonical.slice(0, 40) + "\n" + canonical.slice(40)],
    ["a space", canonical.slice(0, 40) + " " + canonical.slice(40)],
    ["leading whitespace", " " + canonical],
    ["a trailing newline", canonical + "\n"],
    ["missing padding", b64(MOCK_IMAGES.gif).replace(/=+$/, "")],
    ["extra padding", b64(MOCK_IMAGES.gif) + "=="],
    ["padding in the middle", "iVBO=" + canonical.slice(5)],
    ["non-zero unused bits", strayBits(b64(MOCK_IMAGES.gif))],
    ["a data: URI in b64_json", `data:image/png;base64,${canonical}`],
    ["an empty string", ""],
  ])("refuses base64 with %s", async (_, text) => {
    // Node's lenient decoder would have returned bytes for each of these.
    await expectRefused({ b64_json: text }, "invalid_base64");
  });

  it("builds stray bits that Node's decoder ignores (the premise of the case above)", () => {
    const text = strayBits(b64(MOCK_IMAGES.gif));
    expect(text).not.toBe(b64(MOCK_IMAGES.gif));
    expect(Buffer.from(text, "base64").equals(MOCK_IMAGES.gif)).toBe(true);
  });

  it("refuses bytes that are no image, and images it does not deliver (BMP, SVG)", async () => {
    await expectRefused({ b64_json: b64(Buffer.from("just some text, not a picture")) }, "not_an_image");
    await expectRefused({ b64_json: b64(Buffer.from([0x89, 0x50, 0x4e])) }, "not_an_image");
    await expectRefused({ b64_json: b64(MOCK_IMAGES.bmp) }, "unsupported_type");
    await expectRefused({ b64_json: b64(MOCK_IMAGES.svg) }, "not_an_image");
  });

  it("refuses an animated PNG", async () => {
    // An acTL chunk before the image data is what makes a PNG animated (its CRC left zero: sniffing reads the type).
    const actl = Buffer.from([0, 0, 0, 8, 0x61, 0x63, 0x54, 0x4c, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
    const apng = Buffer.concat([PNG.subarray(0, 33), actl, PNG.subarray(33)]);
    await expectRefused({ b64_json: b64(apng) }, "unsupported_type");
  });

  it("refuses an item with no image", async () => {
    await expectRefused({}, "no_image");
    await expectRefused({ b64_json: null, url: null, revised_prompt: "x" }, "no_image");
  });
});

describe("deliverImage: a data: URI from the upstream", () => {
  it("types the image by its bytes, whatever the URI declares", async () => {
    const deps = { download: noDownload, signal };
    expect(await deliverImage({ url: `data:image/jpeg;base64,${b64(PNG)}` }, "url", deps)).toEqual({
      url: `data:image/png;base64,${b64(PNG)}`,
    });
    expect(await deliverImage({ url: `data:;base64,${b64(MOCK_IMAGES.webp)}` }, "b64_json", deps)).toEqual({
      b64_json: b64(MOCK_IMAGES.webp),
    });
    expect(await deliverImage({ url: `DATA:application/octet-stream;BASE64,${b64(MOCK_IMAGES.gif)}` }, "url", deps)).toEqual({
      url: `data:image/gif;base64,${b64(MOCK_IMAGES.gif)}`,
    });
  });

  it.each([
    ["a percent-encoded URI", `data:image/png,${encodeURIComponent(PNG.toString("latin1"))}`],
    ["parameters", `data:image/png;name=x.png;base64,${b64(PNG)}`],
    ["no comma", `data:image/png;base64`],
  ])("refuses %s", async (_, url) => {
    await expectRefused({ url }, "invalid_data_uri");
  });

  it("refuses invalid base64 and SVG in a data: URI", async () => {
    await expectRefused({ url: `data:image/png;base64,${b64(PNG)}\n` }, "invalid_base64");
    await expectRefused({ url: `data:image/svg+xml;base64,${b64(MOCK_IMAGES.svg)}` }, "not_an_image");
  });
});

describe("deliverImage: a link from the upstream", () => {
  it("downloads it, types it by its bytes, and never returns the upstream URL", async () => {
    // The server says PNG; the bytes are JPEG.
    const { asked, download } = fakeDownload(MOCK_IMAGES.jpeg, "image/png");
    const link = "https://cdn.example/img/123.png?sig=secret";
    const asUrl = await deliverImage({ url: link, revised_prompt: "r" }, "url", { download, signal });
    expect(asUrl).toEqual({ url: `data:image/jpeg;base64,${b64(MOCK_IMAGES.jpeg)}`, revised_prompt: "r" });
    const asB64 = await deliverImage({ url: link }, "b64_json", { download, signal });
    expect(Buffer.from(asB64.b64_json!, "base64").equals(MOCK_IMAGES.jpeg)).toBe(true);
    expect(asked).toEqual([link, link]);
    expect(JSON.stringify([asUrl, asB64])).not.toContain("cdn.example");
  });

  it("hands the download the caller's signal", async () => {
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    const download = downloader((_url, s) => {
      seen = s;
      return Promise.resolve({ bytes: PNG, contentType: null });
    });
    await deliverImage({ url: "http://cdn.example/a" }, "url", { download, signal: controller.signal });
    expect(seen).toBe(controller.signal);
  });

  it("refuses a failed download without quoting the URL or the downloader's error", async () => {
    const download = downloader((url) => Promise.reject(new Error(`GET ${url} answered 404`)));
    const err = await refusal({ url: "https://cdn.example/secret-path.png" }, download);
    expect(err.reason).toBe("download_failed");
    expect(err.message).not.toContain("cdn.example");
    expect(err.message).not.toContain("404");
  });

  it("reports a download cut by the client's going away as aborted, not as the upstream's fault", async () => {
    const controller = new AbortController();
    const download = downloader(() => {
      controller.abort();
      return Promise.reject(new Error("aborted"));
    });
    const err: unknown = await deliverImage({ url: "https://cdn.example/a.png" }, "url", { download, signal: controller.signal }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).not.toBeInstanceOf(ImageDeliveryError);
    expect((err as UpstreamError).failure).toBe("aborted");
  });

  it("encodes a download as its pieces arrive, split anywhere, to the same base64", async () => {
    const bytes = MOCK_IMAGES.jpeg;
    for (const cuts of [[1], [2], [1, 2], [3, 4, 5], [bytes.length - 1]]) {
      const pieces: Buffer[] = [];
      let at = 0;
      for (const cut of cuts) pieces.push(bytes.subarray(at, (at = Math.min(bytes.length, at + cut))));
      pieces.push(bytes.subarray(at));
      const download = { stream: () => Promise.resolve({ chunks: chunksOf(...pieces) }) };
      expect(await deliverImage({ url: "https://cdn.example/a" }, "b64_json", { download, signal })).toEqual({ b64_json: b64(bytes) });
    }
  });

  it("refuses a download that fails after its first bytes, and an empty one as no image", async () => {
    async function* cut() {
      yield PNG.subarray(0, 10);
      throw new Error("connection reset by https://cdn.example");
    }
    await expectRefused({ url: "https://cdn.example/a" }, "download_failed", { stream: () => Promise.resolve({ chunks: cut() }) });
    await expectRefused({ url: "https://cdn.example/a" }, "not_an_image", { stream: () => Promise.resolve({ chunks: chunksOf() }) });
  });

  it("refuses downloaded bytes that are no image or not delivered", async () => {
    await expectRefused(
      { url: "https://cdn.example/a" },
      "not_an_image",
      fakeDownload(Buffer.from("<html>404</html>"), "image/png").download,
    );
    await expectRefused({ url: "https://cdn.example/a" }, "unsupported_type", fakeDownload(MOCK_IMAGES.bmp).download);
    await expectRefused({ url: "https://cdn.example/a" }, "not_an_image", fakeDownload(MOCK_IMAGES.svg, "image/svg+xml").download);
  });

  it.each(["ftp://cdn.example/a.png", "file:///etc/passwd", "javascript:alert(1)", "//cdn.example/a.png", "cdn.example/a.png", ""])(
    "refuses the link %j without downloading it",
    async (url) => {
      const { asked, download } = fakeDownload(PNG);
      await expectRefused({ url }, "unsupported_url", download);
      expect(asked).toEqual([]);
    },
  );
});

describe("ImageDeliveryError", () => {
  it("is answered 502 upstream_invalid_output, final, and names neither image nor URL", () => {
    const err = new ImageDeliveryError("download_failed");
    expect(err.failure).toBe("invalid_output");
    expect(err.retryable).toBe(false);
    const client = upstreamToClient(err);
    expect(client.code).toBe("upstream_invalid_output");
    expect(client.status).toBe(502);
    expect(err.message).toBe("upstream image refused: download_failed");
  });
});
