import { add, ceil, mul, ratioOf, whole, type Ratio } from "./ratio.js";

// The image quota rules of the spec ("Image quota", docs/billing.md):
//   native    units = ceil((image_output + uncached_text × 5/30 + uncached_image × 8/30
//                           + cached_text × 1.25/30 + cached_image × 2/30) × effective multiplier)
//   fallback  units = ceil(max(total_tokens, images × base per image) × effective multiplier)
// The effective multiplier is token_multiplier × group_multiplier [× byok_charge_ratio], as for chat.

/** The models priced by their native usage unless configured otherwise, and their dated snapshots. */
export const DEFAULT_NATIVE_IMAGE_MODELS: readonly string[] = ["gpt-image-1", "gpt-image-1-mini", "gpt-image-1.5"];

// Strict on purpose: `gpt-image-1x` or `gpt-image-1-latest` must not inherit another model's pricing.
const SNAPSHOT = /-\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;

/** `gpt-image-1` and its snapshots such as `gpt-image-1-2025-04-23`: exact IDs (case-sensitive) plus `-YYYY-MM-DD`. */
export function isDesignatedImageModel(upstreamModelId: string, designated: readonly string[]): boolean {
  if (designated.includes(upstreamModelId)) return true;
  const date = SNAPSHOT.exec(upstreamModelId);
  return date !== null && designated.includes(upstreamModelId.slice(0, date.index));
}

/** Input counts include their cached parts (cached ⊆ input); output is all output tokens. */
export interface NativeImageUsage {
  textInput: number;
  imageInput: number;
  cachedTextInput: number;
  cachedImageInput: number;
  output: number;
}

export const IMAGE_USAGE_FALLBACK_REASONS = ["absent", "inconsistent", "missing_modality", "missing_cache_breakdown"] as const;

export type ImageUsageFallbackReason = (typeof IMAGE_USAGE_FALLBACK_REASONS)[number];

export type ImageUsageClass =
  | { kind: "native"; usage: NativeImageUsage }
  /** `totalTokens`: the provider's total when it is a usable count, which the fallback must not charge below. */
  | { kind: "fallback"; reason: ImageUsageFallbackReason; totalTokens: number | undefined };

type Fields = Record<string, unknown>;

const isObject = (value: unknown): value is Fields => typeof value === "object" && value !== null && !Array.isArray(value);
const isCount = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

class Unusable extends Error {
  constructor(readonly reason: ImageUsageFallbackReason) {
    super(reason);
  }
}

/** A count that may be missing; present, it must be a non-negative integer. */
function optionalCount(fields: Fields, name: string): number | undefined {
  const value = fields[name];
  if (value === undefined || value === null) return undefined;
  if (!isCount(value)) throw new Unusable("inconsistent");
  return value;
}

function requiredCount(fields: Fields, name: string, missing: ImageUsageFallbackReason): number {
  const value = optionalCount(fields, name);
  if (value === undefined) throw new Unusable(missing);
  return value;
}

function optionalObject(fields: Fields, name: string): Fields | undefined {
  const value = fields[name];
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw new Unusable("inconsistent");
  return value;
}

/**
 * Reads an OpenAI-style image `usage` (ImagesResponse, image_generation.completed / image_edit.completed events).
 * Native only when every term of the formula is known and the parts add up; otherwise the reason for the fallback.
 */
export function classifyImageUsage(usage: unknown): ImageUsageClass {
  if (usage === undefined || usage === null) return { kind: "fallback", reason: "absent", totalTokens: undefined };
  const totalTokens = isObject(usage) && isCount(usage["total_tokens"]) ? usage["total_tokens"] : undefined;
  try {
    return { kind: "native", usage: nativeUsageOf(usage) };
  } catch (error) {
    if (error instanceof Unusable) return { kind: "fallback", reason: error.reason, totalTokens };
    throw error;
  }
}

function nativeUsageOf(usage: unknown): NativeImageUsage {
  if (!isObject(usage)) throw new Unusable("inconsistent");
  const reported = ["input_tokens", "output_tokens", "total_tokens"].map((name) => optionalCount(usage, name));
  if (reported.every((count) => count === undefined)) throw new Unusable("absent");
  const [input, output, total] = reported;
  if (input === undefined || output === undefined || total === undefined || input + output !== total) throw new Unusable("inconsistent");

  const outputDetails = optionalObject(usage, "output_tokens_details");
  if (outputDetails) {
    // Text output has no weight of its own in the spec; it stays in `output` (priced as image output) so it is never undercharged.
    const parts = (optionalCount(outputDetails, "image_tokens") ?? 0) + (optionalCount(outputDetails, "text_tokens") ?? 0);
    if (parts !== output) throw new Unusable("inconsistent");
  }

  const details = optionalObject(usage, "input_tokens_details");
  if (!details) throw new Unusable("missing_modality");
  const textInput = requiredCount(details, "text_tokens", "missing_modality");
  const imageInput = requiredCount(details, "image_tokens", "missing_modality");
  if (textInput + imageInput !== input) throw new Unusable("inconsistent");

  const [cachedTextInput, cachedImageInput] = cachedSplit(details, textInput, imageInput);
  if (cachedTextInput > textInput || cachedImageInput > imageInput) throw new Unusable("inconsistent");
  return { textInput, imageInput, cachedTextInput, cachedImageInput, output };
}

/**
 * Cached tokens per modality, from `cached_tokens_details` (the shape OpenAI's realtime usage has). A bare
 * `cached_tokens` is attributable only when one modality has no input at all; otherwise the split is unknown.
 */
function cachedSplit(details: Fields, textInput: number, imageInput: number): [number, number] {
  const cached = optionalCount(details, "cached_tokens");
  const breakdown = optionalObject(details, "cached_tokens_details");
  if (breakdown) {
    const text = optionalCount(breakdown, "text_tokens") ?? 0;
    const image = optionalCount(breakdown, "image_tokens") ?? 0;
    if (cached !== undefined && text + image !== cached) throw new Unusable("inconsistent");
    return [text, image];
  }
  if (!cached) return [0, 0];
  if (cached > textInput + imageInput) throw new Unusable("inconsistent");
  if (imageInput === 0) return [cached, 0];
  if (textInput === 0) return [0, cached];
  throw new Unusable("missing_cache_breakdown");
}

export interface ImageRates {
  /** The model's token_multiplier: for native usage, the image-output multiplier. */
  tokenMultiplier: number;
  /** The key's pricing-group (global) multiplier; with the model's, the effective multiplier. */
  groupMultiplier: number;
  /** For a request on the client's own upstream key: the share of the charge it pays. Absent: the full charge. */
  byokRatio?: number | undefined;
}

const effectiveMultiplier = (rates: ImageRates): Ratio =>
  mul(ratioOf(rates.tokenMultiplier), ratioOf(rates.groupMultiplier), ratioOf(rates.byokRatio ?? 1));

/** The spec's input weights, spelled as it writes them (a fraction of an image-output token). */
const perThirty = (price: number): Ratio => mul(ratioOf(price), { num: 1n, den: 30n });
const UNCACHED_TEXT = perThirty(5);
const UNCACHED_IMAGE = perThirty(8);
const CACHED_TEXT = perThirty(1.25);
const CACHED_IMAGE = perThirty(2);

/** The spec's rule for complete native usage: no quality multiplier, no per-image floor. */
export function nativeImageQuota(usage: NativeImageUsage, rates: ImageRates): bigint {
  const text = whole(usage.textInput, "textInput");
  const image = whole(usage.imageInput, "imageInput");
  const cachedText = whole(usage.cachedTextInput, "cachedTextInput");
  const cachedImage = whole(usage.cachedImageInput, "cachedImageInput");
  if (cachedText > text || cachedImage > image) throw new RangeError("cached tokens must be a subset of their modality's input");
  const weighted = add(
    ratioOf(whole(usage.output, "output")),
    mul(ratioOf(text - cachedText), UNCACHED_TEXT),
    mul(ratioOf(image - cachedImage), UNCACHED_IMAGE),
    mul(ratioOf(cachedText), CACHED_TEXT),
    mul(ratioOf(cachedImage), CACHED_IMAGE),
  );
  return ceil(mul(weighted, effectiveMultiplier(rates)));
}

export interface ImageRequest {
  /** Output images: those requested (the estimate) or delivered (the fallback charge). */
  images: number;
  /** The requested size as sent; only `4K` (any letter case) changes the base. */
  size: string | undefined;
  kind: "generation" | "edit";
}

const BASE_PER_IMAGE = 5_000n;
const BASE_PER_4K_IMAGE = 12_500n;
/** The spec gives edits a flat default floor, whatever the size. */
const EDIT_BASE_PER_IMAGE = 5_000n;

function floorUnits(request: ImageRequest): bigint {
  const perImage =
    request.kind === "edit" ? EDIT_BASE_PER_IMAGE : request.size?.toUpperCase() === "4K" ? BASE_PER_4K_IMAGE : BASE_PER_IMAGE;
  return whole(request.images, "images") * perImage;
}

/** Other models, and designated ones without usable usage: the provider's total never lowers the per-image floor. */
export function fallbackImageQuota(request: ImageRequest & { providerTotalTokens: number | undefined }, rates: ImageRates): bigint {
  const floor = floorUnits(request);
  const total = request.providerTotalTokens === undefined ? 0n : whole(request.providerTotalTokens, "providerTotalTokens");
  return ceil(mul(ratioOf(total > floor ? total : floor), effectiveMultiplier(rates)));
}

/**
 * The admission hold, for every image model: the per-image floor of the images requested. It is exactly what the
 * request costs if its usage goes missing, so a fallback settles within the hold; native usage above it (large,
 * high-quality images) is charged in full at settlement, as any overshoot.
 */
export function imageQuotaEstimate(request: ImageRequest, rates: ImageRates): bigint {
  return ceil(mul(ratioOf(floorUnits(request)), effectiveMultiplier(rates)));
}

/**
 * What an image answer is billed on: complete native usage, or the per-image fallback with the images delivered
 * and the provider's total. `reason` is set when a designated model's usage was not complete (the request is
 * then marked `gpt_image_usage_fallback`); null for other models, whose per-image rule is their ordinary one.
 */
export type ImageBilling =
  | { kind: "native"; usage: NativeImageUsage }
  | { kind: "fallback"; images: number; totalTokens: number | undefined; reason: ImageUsageFallbackReason | null };

/**
 * The billing of an answer's `usage` (the upstream's JSON, unparsed by anyone else) for `images` delivered by
 * `upstreamModel`. Other models read only a usable `total_tokens`, which can raise their floor.
 */
export function imageBillingOf(usage: unknown, images: number, upstreamModel: string, designated: readonly string[]): ImageBilling {
  const classified = classifyImageUsage(usage);
  if (!isDesignatedImageModel(upstreamModel, designated)) {
    return {
      kind: "fallback",
      images,
      totalTokens: classified.kind === "native" ? totalOf(classified.usage) : classified.totalTokens,
      reason: null,
    };
  }
  if (classified.kind === "native") return classified;
  return { kind: "fallback", images, totalTokens: classified.totalTokens, reason: classified.reason };
}

const totalOf = (usage: NativeImageUsage) => usage.textInput + usage.imageInput + usage.output;

/** The charge of an answer: its native usage, else the per-image floor (or the provider's total, when higher). */
export function imageQuota(billing: ImageBilling, request: Omit<ImageRequest, "images">, rates: ImageRates): bigint {
  if (billing.kind === "native") return nativeImageQuota(billing.usage, rates);
  return fallbackImageQuota(
    { images: billing.images, size: request.size, kind: request.kind, providerTotalTokens: billing.totalTokens },
    rates,
  );
}
