import { errors } from "../errors.js";
import { fileTypeOfBase64 } from "../providers/upstream-images/base64-file-type.js";
import { CanonicalBase64 } from "../providers/upstream-images/canonical-base64.js";
import type { ImageDownload } from "../providers/upstream-images/image-delivery.js";
import { UpstreamError, type NeutralImageRequest } from "../providers/types.js";
import type { ImageEditRequest } from "./image-request-schema.js";

// An edit's input images as Gemini takes them: inline data (docs/api.md, "Images"). Google is never handed a
// link: a data: URI is checked and typed by its bytes, an http(s) link is fetched by the gateway's SSRF-checked
// downloader (the client's URL may point anywhere, the gateway's own network included). A multipart upload is a
// data: URI already (src/media/edit-body.ts), typed when it was read.

/** The input types Gemini and the multipart edit both take, by file-type's extension. */
const INPUT_TYPES: ReadonlyMap<string, string> = new Map([
  ["png", "image/png"],
  ["jpg", "image/jpeg"],
  ["webp", "image/webp"],
]);

const DATA_URI = /^data:(?:[\w!#$&^.+-]+\/[\w!#$&^.+-]+)?;base64,/i;

type InputImage = ImageEditRequest["images"][number];

const urlOf = (image: InputImage): string =>
  typeof image === "string" ? image : typeof image.image_url === "string" ? image.image_url : image.image_url.url;

const invalid = (index: number, why: string) => errors.badRequest(`Invalid images[${index}]: ${why}.`, `images[${index}]`, "invalid_value");

async function base64Of(url: string, index: number, download: ImageDownload, signal: AbortSignal): Promise<CanonicalBase64> {
  const head = DATA_URI.exec(url);
  if (head) {
    const base64 = CanonicalBase64.ofText(url.slice(head[0].length));
    if (!base64) throw invalid(index, "its data: URI does not hold canonical base64");
    return base64;
  }
  if (!/^https?:\/\//i.test(url)) throw invalid(index, "must be an http(s) URL or a base64 data: URI");
  let base64: CanonicalBase64 | null;
  try {
    base64 = await CanonicalBase64.encode((await download.stream(url, signal)).chunks);
  } catch {
    if (signal.aborted) throw new UpstreamError("aborted", null);
    // The downloader's own message may quote the URL; the client knows it already, the log must not.
    throw invalid(index, "the image could not be downloaded (an unreachable, non-public or too large address, or an error answer)");
  }
  if (base64 === null) throw invalid(index, "the link answered an empty body");
  return base64;
}

/** The edit's images as inline data, in order; a 400 naming `images[i]` for the first one that is not a usable image. */
export async function geminiInputImages(
  images: readonly InputImage[],
  download: ImageDownload,
  signal: AbortSignal,
): Promise<NeutralImageRequest["images"]> {
  const inline: { mimeType: string; data: string }[] = [];
  // One after the other: a refused image ends the edit before any further download.
  for (const [index, image] of images.entries()) {
    const base64 = await base64Of(urlOf(image), index, download, signal);
    const type = await fileTypeOfBase64(base64);
    const mimeType = type && INPUT_TYPES.get(type.ext);
    if (!mimeType)
      throw invalid(index, `${type ? `it is of type ${type.mime}` : "it is not an image"}; only PNG, JPEG and WebP images are taken`);
    inline.push({ mimeType, data: base64.text() });
  }
  return inline;
}
