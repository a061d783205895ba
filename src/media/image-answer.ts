import { imageBillingOf } from "../billing/image-quota.js";
import {
  deliverImageItem,
  ImageDeliveryError,
  type ImageDownload,
  type ImageItem,
  type ImageResponseFormat,
  type UpstreamImage,
} from "../providers/upstream-images/image-delivery.js";
import type { JsonResult, UsageReport } from "../providers/types.js";
import { imagesResponseParts } from "./image-answer-bytes.js";

// An upstream ImagesResponse as the client gets it (spec "Image generation response", docs/api.md "Images"):
// each image delivered by the gateway (a data: URI or plain base64 typed by its bytes, never an upstream URL),
// the vendor's own descriptive fields, and the usage when it is a complete ImageGenUsage. Anything else the
// upstream adds (routing or billing metadata, links) stays behind.

/** ImagesResponse's own fields besides `created`, `data` and `usage`, copied when they are strings. */
const DESCRIPTIVE = ["background", "output_format", "size", "quality"] as const;

const isCount = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The counts of `fields` that `source` has, as non-negative integers; undefined when a required one is missing. */
function counts(source: unknown, fields: readonly string[], required: readonly string[]): Record<string, unknown> | undefined {
  if (!isObject(source)) return undefined;
  const out: Record<string, unknown> = {};
  for (const name of fields) if (isCount(source[name])) out[name] = source[name];
  return required.every((name) => name in out) ? out : undefined;
}

/**
 * The usage as the client may see it: the token counts of OpenAI's ImageGenUsage and nothing else (no cost or
 * vendor fields), and only when it is complete by that schema (so the answer stays a valid ImagesResponse);
 * undefined otherwise. The charge never depends on what is shown here.
 */
export function publicImageUsage(usage: unknown): Record<string, unknown> | undefined {
  const top = counts(usage, ["input_tokens", "output_tokens", "total_tokens"], ["input_tokens", "output_tokens", "total_tokens"]);
  const input = counts(
    (usage as Record<string, unknown> | undefined)?.input_tokens_details,
    ["text_tokens", "image_tokens", "cached_tokens"],
    ["text_tokens", "image_tokens"],
  );
  if (!top || !input) return undefined;
  const u = usage as Record<string, unknown>;
  const cachedSplit = counts(
    isObject(u.input_tokens_details) ? u.input_tokens_details.cached_tokens_details : undefined,
    ["text_tokens", "image_tokens"],
    [],
  );
  if (cachedSplit && Object.keys(cachedSplit).length > 0) input.cached_tokens_details = cachedSplit;
  top.input_tokens_details = input;
  const output = counts(u.output_tokens_details, ["image_tokens", "text_tokens"], ["image_tokens", "text_tokens"]);
  if (output) top.output_tokens_details = output;
  return top;
}

export interface DeliveredImages {
  /** The client's JSON, in pieces of bytes (the images' base64 are the upstream's own bytes). */
  parts: Uint8Array[];
  /** Images delivered: what the per-image rule bills. */
  images: number;
}

/** Its `data` items, or an invalid-answer failure (the upstream did the work: no other target is tried). */
function itemsOf(answer: JsonResult): UpstreamImage[] {
  const data = answer.body.data;
  if (!Array.isArray(data) || data.length === 0 || !data.every(isObject)) throw new ImageDeliveryError("no_image");
  return data as UpstreamImage[];
}

/**
 * Delivers every image of an answer, one after the other: the first one that cannot be delivered ends the request
 * (ImageDeliveryError → 502) before any further download. `signal` is the client's: a client gone mid-download
 * ends it as `aborted`.
 */
export async function deliverImagesAnswer(
  answer: JsonResult,
  format: ImageResponseFormat,
  deps: { download: ImageDownload; signal: AbortSignal },
): Promise<DeliveredImages> {
  const items = itemsOf(answer);
  const data: ImageItem[] = [];
  for (const item of items) data.push(await deliverImageItem(item, format, deps));
  const body = answer.body;
  const created = isCount(body.created) ? body.created : Math.floor(Date.now() / 1000);
  const rest: Record<string, unknown> = {};
  for (const name of DESCRIPTIVE) if (typeof body[name] === "string") rest[name] = body[name];
  const usage = publicImageUsage(body.usage);
  if (usage) rest.usage = usage;
  return { parts: imagesResponseParts(created, data, rest), images: data.length };
}

/**
 * What an image answer is billed on (docs/billing.md, "Image quota"): its ImageBilling, with the token view of the
 * usage for the request log; null `usage` (nothing usable reported) is the fallback's own case, billed all the same.
 */
export function imageUsageReport(
  tokens: UsageReport | null,
  rawUsage: unknown,
  images: number,
  upstreamModel: string,
  designated: readonly string[],
): UsageReport {
  return {
    promptTokens: tokens?.promptTokens ?? 0,
    completionTokens: tokens?.completionTokens ?? 0,
    cachedTokens: tokens?.cachedTokens ?? 0,
    image: imageBillingOf(rawUsage, images, upstreamModel, designated),
  };
}

/** An AbortSignal for downloads that fires with the request's upstream abort (the client left). */
export function abortSignalOf(upstream: { aborted: boolean; once(event: "abort", listener: () => void): unknown }): AbortSignal {
  const controller = new AbortController();
  if (upstream.aborted) controller.abort();
  else upstream.once("abort", () => controller.abort());
  return controller.signal;
}
