import type { UpstreamAbort } from "../upstream-abort.js";
import { deliverImage, type ImageDownload } from "./image-delivery.js";

// Images in chat answers (issue 14, "Delivery" rules 1-3): an image-capable chat model answers with image links
// in `message.images` (OpenRouter, Gemini's OpenAI-compatible API) or as `image_url` parts of an array `content`;
// streams carry the same in `delta`. Each link reaches the client as `data:image/<type>;base64,…` typed by the
// bytes: a data: URI checked strictly, an http(s) link downloaded by the SSRF-checked downloader, never relayed.
//
// Every answer is looked at, asked for images or not (an upstream that sends them unasked must not leak its
// links), but only in its parse, which the gateway holds anyway: a few member reads per choice, cheaper than
// searching the answer's text. Only an answer that has image parts is changed and serialised again.

/** Where one image's link sits: `holder[key]` is replaced by the delivered data: URI. */
export interface ImageSlot {
  holder: Record<string, unknown> | null;
  key: string;
  url: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * An `image_url` item's link: `{image_url: {url}}` as OpenAI's parts have it, or `{image_url: "…"}`. An item of
 * `images` in any other shape gets a slot without a link, so that it is refused rather than relayed unchecked.
 */
function slotOf(item: unknown): ImageSlot {
  if (isObject(item)) {
    const ref = item.image_url;
    if (typeof ref === "string") return { holder: item, key: "image_url", url: ref };
    if (isObject(ref)) return { holder: ref, key: "url", url: ref.url };
  }
  return { holder: null, key: "", url: undefined };
}

/**
 * The image links of every choice's `message` (JSON) or `delta` (stream chunk), or null when there is none
 * (the usual answer: no allocation).
 */
export function chatImageSlots(choices: unknown, field: "message" | "delta"): ImageSlot[] | null {
  if (!Array.isArray(choices)) return null;
  let slots: ImageSlot[] | null = null;
  for (const choice of choices) {
    const message = isObject(choice) ? choice[field] : undefined;
    if (!isObject(message)) continue;
    const { images, content } = message;
    if (Array.isArray(images)) for (const item of images) (slots ??= []).push(slotOf(item));
    if (!Array.isArray(content)) continue;
    for (const part of content) {
      if (isObject(part) && (part.type === "image_url" || part.image_url !== undefined)) (slots ??= []).push(slotOf(part));
    }
  }
  return slots;
}

/**
 * Replaces every slot's link with its delivered data: URI, in place. Throws ImageDeliveryError (502
 * `upstream_invalid_output`) for the first image that cannot be delivered, or an `aborted` UpstreamError when
 * `upstream` is aborted (the client left) during a download; the downloads still running stop with it.
 */
export async function deliverChatImages(slots: ImageSlot[], download: ImageDownload, upstream: UpstreamAbort): Promise<void> {
  // The downloader takes an AbortSignal, which the request's UpstreamAbort is not (src/providers/upstream-abort.ts
  // says why): a controller follows it, for these rare answers only.
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (upstream.aborted) abort();
  else upstream.once("abort", abort);
  try {
    const deps = { download, signal: controller.signal };
    const delivered = await Promise.all(
      slots.map((slot) => deliverImage({ url: typeof slot.url === "string" ? slot.url : null }, "url", deps)),
    );
    for (let i = 0; i < slots.length; i++) {
      const { holder, key } = slots[i]!;
      holder![key] = delivered[i]!.url;
    }
  } catch (err) {
    // The first refusal decides; the other downloads are not waited for.
    abort();
    throw err;
  } finally {
    upstream.off("abort", abort);
  }
}
