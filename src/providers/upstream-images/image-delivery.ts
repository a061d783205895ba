import { CanonicalBase64 } from "./canonical-base64.js";
import { UpstreamError } from "../types.js";
import { fileTypeOfBase64 } from "./base64-file-type.js";

/**
 * Delivery of one upstream image to the client (issue 14, "Delivery", rules 1-3), shared by image generations,
 * edits and chat images. Whatever the upstream sent (base64, a data: URI, a link), the client gets the bytes
 * themselves, typed by what the bytes are: never an upstream URL (it may expire, leak the provider, or point
 * anywhere), never a type taken from a header, a data: URI or the requested `output_format`.
 */

/** The client's `response_format`: a data: URI in `url`, or plain base64 in `b64_json`. */
export type ImageResponseFormat = "url" | "b64_json";

/** One item of an upstream `ImagesResponse.data` (null fields count as absent). */
export interface UpstreamImage {
  /** Base64 text; or, in an answer the adapter read as bytes (parseImagesAnswer), those bytes proven canonical. */
  b64_json?: string | CanonicalBase64 | null;
  url?: string | null;
  revised_prompt?: string | null;
}

/** What the client gets: exactly one of `url` and `b64_json`, as `response_format` asked. */
export interface DeliveredImage {
  url?: string;
  b64_json?: string;
  revised_prompt?: string;
}

/**
 * Fetches an upstream image link, its body handed over as it arrives. The gateway's implementation (the
 * SafeDownloader) guards against SSRF (private addresses, redirects to them) and caps the size and the time; it
 * rejects, or its chunks throw, on any failure. No content type is asked for: the bytes say what they are.
 */
export interface ImageDownload {
  stream(url: string, signal: AbortSignal): Promise<{ chunks: AsyncIterable<Uint8Array> }>;
}

/** Why an upstream image was refused: for logs and tests, never shown with the image or its URL. */
export type ImageRejection =
  "no_image" | "invalid_base64" | "invalid_data_uri" | "unsupported_url" | "download_failed" | "not_an_image" | "unsupported_type";

/**
 * An upstream image the gateway will not deliver: an `invalid_output` failure, so the route answers 502
 * `upstream_invalid_output` and never tries another target (which would generate, and bill, again).
 */
export class ImageDeliveryError extends UpstreamError {
  constructor(readonly reason: ImageRejection) {
    super("invalid_output", null);
    this.name = "ImageDeliveryError";
    this.message = `upstream image refused: ${reason}`;
  }
}

/**
 * The formats delivered, by file-type's extension; their MIME types are written here, not taken from anywhere.
 * An animated PNG (file-type's `apng`) is refused with the rest: no upstream is known to send one.
 */
const DELIVERED_TYPES: ReadonlyMap<string, string> = new Map([
  ["png", "image/png"],
  ["jpg", "image/jpeg"],
  ["webp", "image/webp"],
  ["gif", "image/gif"],
]);

/**
 * An image as the gateway holds it: canonical base64, never decoded whole (as the upstream sent it, with its text
 * when it came as a string, or encoded from a download as it arrived).
 */
interface Source {
  base64: CanonicalBase64;
  text?: string;
}

/**
 * Strict base64: only the canonical encoding of its own bytes is accepted, that is the standard alphabet,
 * padding to a multiple of 4, no whitespace or line breaks, zero unused bits in the last character
 * (src/providers/upstream-images/canonical-base64.ts; Node's decoder would silently accept all of these). Upstreams send unbroken base64
 * in JSON; a wrapped or padded-differently string is not theirs.
 */
function base64Source(text: string): Source {
  const base64 = CanonicalBase64.ofText(text);
  if (!base64) throw new ImageDeliveryError("invalid_base64");
  return { base64, text };
}

/** `data:[type/subtype];base64,<base64>`: the only data: URI form accepted; the declared type is ignored. */
const DATA_URI = /^data:(?:[\w!#$&^.+-]+\/[\w!#$&^.+-]+)?;base64,/i;

function dataUriSource(uri: string): Source {
  const head = DATA_URI.exec(uri);
  if (!head) throw new ImageDeliveryError("invalid_data_uri");
  return base64Source(uri.slice(head[0].length));
}

async function linkSource(url: string, download: ImageDownload, signal: AbortSignal): Promise<Source> {
  if (/^data:/i.test(url)) return dataUriSource(url);
  if (!/^https?:\/\//i.test(url)) throw new ImageDeliveryError("unsupported_url");
  let base64: CanonicalBase64 | null;
  try {
    // Encoded as it arrives: the image is never held whole as bytes, and is typed from its base64 like any other.
    base64 = await CanonicalBase64.encode((await download.stream(url, signal)).chunks);
  } catch {
    // A client that went away is not the upstream's fault; the downloader's own error (which may quote the URL)
    // is dropped either way.
    if (signal.aborted) throw new UpstreamError("aborted", null);
    throw new ImageDeliveryError("download_failed");
  }
  // An empty body, which file-type would not have named either.
  if (base64 === null) throw new ImageDeliveryError("not_an_image");
  return { base64 };
}

/** The MIME type the image is, if one delivered: typed from the few bytes file-type reads of its base64. */
async function sniff(source: Source): Promise<string> {
  const type = await fileTypeOfBase64(source.base64);
  if (!type) throw new ImageDeliveryError("not_an_image");
  const mime = DELIVERED_TYPES.get(type.ext);
  if (!mime) throw new ImageDeliveryError("unsupported_type");
  return mime;
}

/**
 * One upstream image, checked and typed. Base64 wins when the upstream sent both (no network call). Throws
 * ImageDeliveryError for anything not deliverable, or an `aborted` UpstreamError when `signal` fired during a
 * download.
 */
async function checked(
  image: UpstreamImage,
  deps: { download: ImageDownload; signal: AbortSignal },
): Promise<{ source: Source; mime: string }> {
  let source: Source;
  if (image.b64_json instanceof CanonicalBase64) source = { base64: image.b64_json };
  else if (typeof image.b64_json === "string") source = base64Source(image.b64_json);
  else if (typeof image.url === "string") source = await linkSource(image.url, deps.download, deps.signal);
  else throw new ImageDeliveryError("no_image");
  return { source, mime: await sniff(source) };
}

/** An upstream image proven deliverable: its bytes and their MIME type. */
export interface CheckedImage {
  bytes: Buffer;
  mime: string;
}

/** One upstream image's bytes, checked and typed (checked's failures): for a route that answers the bytes themselves. */
export async function checkedImage(image: UpstreamImage, deps: { download: ImageDownload; signal: AbortSignal }): Promise<CheckedImage> {
  const { source, mime } = await checked(image, deps);
  return { bytes: source.base64.decode(), mime };
}

/**
 * One image as an ImagesResponse item is written from (src/media/image-answer.ts): its member, what precedes the
 * base64 in it (a data: URI's head, or nothing), and the base64, as bytes (the upstream's own, in an answer read as
 * bytes, or a download's, encoded as it arrived: never made a string), else as text. Neither part has a character
 * JSON escapes.
 */
export interface ImageItem {
  member: ImageResponseFormat;
  head: string;
  base64: CanonicalBase64 | string;
  revised_prompt?: string;
}

/** One upstream image as the client gets it (checked's failures); base64 the upstream sent goes on as it came. */
export async function deliverImageItem(
  image: UpstreamImage,
  format: ImageResponseFormat,
  deps: { download: ImageDownload; signal: AbortSignal },
): Promise<ImageItem> {
  const { source, mime } = await checked(image, deps);
  const base64 = source.text ?? source.base64;
  const item: ImageItem = { member: format, head: format === "url" ? `data:${mime};base64,` : "", base64 };
  if (typeof image.revised_prompt === "string") item.revised_prompt = image.revised_prompt;
  return item;
}

/** deliverImageItem's image as text (chat answers, whose parse the link is replaced in; edit stream checks). */
export async function deliverImage(
  image: UpstreamImage,
  format: ImageResponseFormat,
  deps: { download: ImageDownload; signal: AbortSignal },
): Promise<DeliveredImage> {
  const item = await deliverImageItem(image, format, deps);
  const base64 = typeof item.base64 === "string" ? item.base64 : item.base64.text();
  const delivered: DeliveredImage = format === "url" ? { url: item.head + base64 } : { b64_json: base64 };
  if (item.revised_prompt !== undefined) delivered.revised_prompt = item.revised_prompt;
  return delivered;
}
