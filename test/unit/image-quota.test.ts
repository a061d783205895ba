import { describe, expect, it } from "vitest";
import {
  imageBillingOf,
  imageQuota,
  classifyImageUsage,
  DEFAULT_NATIVE_IMAGE_MODELS,
  fallbackImageQuota,
  imageQuotaEstimate,
  isDesignatedImageModel,
  nativeImageQuota,
  type ImageRates,
  type NativeImageUsage,
} from "../../src/billing/image-quota.js";

const plain: ImageRates = { tokenMultiplier: 1, groupMultiplier: 1 };
const none: NativeImageUsage = { textInput: 0, imageInput: 0, cachedTextInput: 0, cachedImageInput: 0, output: 0 };

describe("isDesignatedImageModel", () => {
  it.each([
    "gpt-image-1",
    "gpt-image-1-mini",
    "gpt-image-1.5",
    "gpt-image-1-2025-04-23",
    "gpt-image-1-mini-2025-10-06",
    "gpt-image-1.5-2025-12-16",
  ])("%s is designated by default", (id) => expect(isDesignatedImageModel(id, DEFAULT_NATIVE_IMAGE_MODELS)).toBe(true));

  it.each([
    "gpt-image-1x",
    "gpt-image-10",
    "gpt-image-1-latest",
    "gpt-image-1-2025-13-01",
    "gpt-image-1-2025-04-23-x",
    "GPT-IMAGE-1",
    "dall-e-3",
  ])("%s is not", (id) => expect(isDesignatedImageModel(id, DEFAULT_NATIVE_IMAGE_MODELS)).toBe(false));

  it("follows the configured list: a snapshot of an unlisted model does not match", () => {
    expect(isDesignatedImageModel("gpt-image-1-mini", ["gpt-image-1"])).toBe(false);
    expect(isDesignatedImageModel("gpt-image-1-mini-2025-10-06", ["gpt-image-1"])).toBe(false);
    expect(isDesignatedImageModel("gpt-image-1-2025-04-23", [])).toBe(false);
  });
});

describe("nativeImageQuota", () => {
  it("meets the spec's check: 27.5 × (2000 + 100 × 5/30) = 55,458.33… → 55,459", () => {
    const usage = { ...none, textInput: 100, output: 2000 };
    expect(nativeImageQuota(usage, { tokenMultiplier: 27.5, groupMultiplier: 1 })).toBe(55_459n);
    // The effective multiplier is the model's times the group's: 5.5 × 5 is the same 27.5.
    expect(nativeImageQuota(usage, { tokenMultiplier: 5.5, groupMultiplier: 5 })).toBe(55_459n);
  });

  it("weighs each input modality, cached and uncached, exactly", () => {
    // 300 + 60 × 5/30 + 30 × 8/30 = 300 + 10 + 8
    expect(nativeImageQuota({ ...none, textInput: 60, imageInput: 30, output: 300 }, plain)).toBe(318n);
    // cached: 48 × 1.25/30 + 15 × 2/30 = 2 + 1
    expect(nativeImageQuota({ ...none, textInput: 48, imageInput: 15, cachedTextInput: 48, cachedImageInput: 15 }, plain)).toBe(3n);
  });

  it("never counts cached tokens twice", () => {
    // 120 text of which 96 cached: 24 × 5/30 + 96 × 1.25/30 = 4 + 4; 150 image of which 120 cached: 30 × 8/30 + 120 × 2/30 = 8 + 8
    const usage = { textInput: 120, imageInput: 150, cachedTextInput: 96, cachedImageInput: 120, output: 1000 };
    expect(nativeImageQuota(usage, plain)).toBe(1024n);
  });

  it("keeps a zero multiplier free", () => {
    const usage = { ...none, textInput: 100, output: 2000 };
    expect(nativeImageQuota(usage, { tokenMultiplier: 0, groupMultiplier: 1 })).toBe(0n);
    expect(nativeImageQuota(usage, { tokenMultiplier: 27.5, groupMultiplier: 0 })).toBe(0n);
    expect(nativeImageQuota(usage, { ...plain, byokRatio: 0 })).toBe(0n);
  });

  it("applies no per-image floor to complete usage", () => {
    expect(nativeImageQuota({ ...none, textInput: 6, output: 272 }, plain)).toBe(273n);
  });

  it("refuses fractional or negative counts, and cached tokens beyond their modality", () => {
    expect(() => nativeImageQuota({ ...none, output: 1.5 }, plain)).toThrow(RangeError);
    expect(() => nativeImageQuota({ ...none, textInput: -1 }, plain)).toThrow(RangeError);
    expect(() => nativeImageQuota({ ...none, textInput: 10, cachedTextInput: 11 }, plain)).toThrow(RangeError);
    expect(() => nativeImageQuota({ ...none, textInput: 10, cachedImageInput: 1 }, plain)).toThrow(RangeError);
  });
});

describe("classifyImageUsage", () => {
  const usage = (fields: Record<string, unknown>) => ({
    input_tokens: 100,
    output_tokens: 2000,
    total_tokens: 2100,
    input_tokens_details: { text_tokens: 60, image_tokens: 40 },
    ...fields,
  });
  const fallback = (reason: string, totalTokens?: number) => ({ kind: "fallback", reason, totalTokens });

  it("reads complete usage, as the Images API documents it", () => {
    expect(classifyImageUsage(usage({}))).toEqual({
      kind: "native",
      usage: { textInput: 60, imageInput: 40, cachedTextInput: 0, cachedImageInput: 0, output: 2000 },
    });
  });

  it("reads the cached split per modality", () => {
    const details = { text_tokens: 60, image_tokens: 40, cached_tokens: 50, cached_tokens_details: { text_tokens: 20, image_tokens: 30 } };
    expect(classifyImageUsage(usage({ input_tokens_details: details }))).toMatchObject({
      kind: "native",
      usage: { cachedTextInput: 20, cachedImageInput: 30 },
    });
  });

  it("attributes a bare cached_tokens to the only modality with input", () => {
    const textOnly = usage({ input_tokens_details: { text_tokens: 100, image_tokens: 0, cached_tokens: 64 } });
    expect(classifyImageUsage(textOnly)).toMatchObject({ kind: "native", usage: { cachedTextInput: 64, cachedImageInput: 0 } });
    const imageOnly = usage({ input_tokens_details: { text_tokens: 0, image_tokens: 100, cached_tokens: 64 } });
    expect(classifyImageUsage(imageOnly)).toMatchObject({ kind: "native", usage: { cachedTextInput: 0, cachedImageInput: 64 } });
  });

  it("accepts an output breakdown that adds up, text output staying in the output", () => {
    const details = { image_tokens: 1990, text_tokens: 10 };
    expect(classifyImageUsage(usage({ output_tokens_details: details }))).toMatchObject({ kind: "native", usage: { output: 2000 } });
  });

  it.each([undefined, null, {}])("falls back as absent on %j", (value) => {
    expect(classifyImageUsage(value)).toEqual(fallback("absent"));
  });

  it.each([
    ["a total that is not input + output", usage({ total_tokens: 2101 }), 2101],
    ["a non-integer count", usage({ output_tokens: 2000.5 }), 2100],
    ["a negative count", usage({ input_tokens: -100, total_tokens: 1900 }), 1900],
    ["a count as a string", usage({ output_tokens: "2000" }), 2100],
    ["a missing output count", usage({ output_tokens: undefined }), 2100],
    ["modalities not adding up to the input", usage({ input_tokens_details: { text_tokens: 60, image_tokens: 41 } }), 2100],
    ["more cached than input", usage({ input_tokens_details: { text_tokens: 100, image_tokens: 0, cached_tokens: 101 } }), 2100],
    [
      "a cached modality above its input",
      usage({ input_tokens_details: { text_tokens: 60, image_tokens: 40, cached_tokens_details: { text_tokens: 61 } } }),
      2100,
    ],
    [
      "a cached split not adding up to cached_tokens",
      usage({ input_tokens_details: { text_tokens: 60, image_tokens: 40, cached_tokens: 30, cached_tokens_details: { text_tokens: 10 } } }),
      2100,
    ],
    ["an output breakdown not adding up", usage({ output_tokens_details: { image_tokens: 1000 } }), 2100],
    ["details that are not an object", usage({ input_tokens_details: [60, 40] }), 2100],
    ["a usage that is not an object", "2100", undefined],
    ["an unusable total", usage({ total_tokens: -1 }), undefined],
  ])("falls back as inconsistent on %s, keeping a usable total", (_name, value, total) => {
    expect(classifyImageUsage(value)).toEqual(fallback("inconsistent", total));
  });

  it("falls back as missing_modality without the text/image split", () => {
    expect(classifyImageUsage(usage({ input_tokens_details: undefined }))).toEqual(fallback("missing_modality", 2100));
    expect(classifyImageUsage(usage({ input_tokens_details: { text_tokens: 100 } }))).toEqual(fallback("missing_modality", 2100));
  });

  it("falls back as missing_cache_breakdown when cached tokens cannot be attributed to a modality", () => {
    const details = { text_tokens: 60, image_tokens: 40, cached_tokens: 30 };
    expect(classifyImageUsage(usage({ input_tokens_details: details }))).toEqual(fallback("missing_cache_breakdown", 2100));
    // No cached tokens: nothing to attribute.
    const uncached = { text_tokens: 60, image_tokens: 40, cached_tokens: 0 };
    expect(classifyImageUsage(usage({ input_tokens_details: uncached }))).toMatchObject({ kind: "native" });
  });
});

describe("fallbackImageQuota", () => {
  const generation = { images: 1, size: undefined, kind: "generation", providerTotalTokens: undefined } as const;

  it.each([
    [undefined, 5_000n],
    ["", 5_000n],
    ["1K", 5_000n],
    ["2K", 5_000n],
    ["1024x1024", 5_000n],
    ["4K", 12_500n],
    ["4k", 12_500n],
  ])("size %j is %s units an image", (size, units) => {
    expect(fallbackImageQuota({ ...generation, size }, plain)).toBe(units);
    expect(fallbackImageQuota({ ...generation, size, images: 3 }, plain)).toBe(3n * units);
  });

  it("charges max(total_tokens, images × base): usage raises the base, never lowers it", () => {
    expect(fallbackImageQuota({ ...generation, images: 2, providerTotalTokens: 4_000 }, plain)).toBe(10_000n);
    expect(fallbackImageQuota({ ...generation, images: 2, providerTotalTokens: 10_001 }, plain)).toBe(10_001n);
    expect(fallbackImageQuota({ ...generation, images: 1, size: "4K", providerTotalTokens: 12_000 }, plain)).toBe(12_500n);
  });

  it("gives edits a floor of 5,000 an image, whatever the size", () => {
    expect(fallbackImageQuota({ ...generation, kind: "edit", images: 2 }, plain)).toBe(10_000n);
    expect(fallbackImageQuota({ ...generation, kind: "edit", images: 1, size: "4K" }, plain)).toBe(5_000n);
    expect(fallbackImageQuota({ ...generation, kind: "edit", images: 1, providerTotalTokens: 7_000 }, plain)).toBe(7_000n);
  });

  it("applies the model's and the group's multipliers exactly, rounding once; zero stays free", () => {
    // 5,000 × 0.1 × 3 = 1,500 exactly; 10,001 × 0.3 = 3,000.3 → 3,001
    expect(fallbackImageQuota(generation, { tokenMultiplier: 0.1, groupMultiplier: 3 })).toBe(1_500n);
    expect(fallbackImageQuota({ ...generation, providerTotalTokens: 10_001 }, { tokenMultiplier: 0.1, groupMultiplier: 3 })).toBe(3_001n);
    expect(fallbackImageQuota(generation, { ...plain, byokRatio: 0.25 })).toBe(1_250n);
    expect(fallbackImageQuota(generation, { tokenMultiplier: 0, groupMultiplier: 1 })).toBe(0n);
  });

  it("refuses fractional or negative counts", () => {
    expect(() => fallbackImageQuota({ ...generation, images: 1.5 }, plain)).toThrow(RangeError);
    expect(() => fallbackImageQuota({ ...generation, images: -1 }, plain)).toThrow(RangeError);
    expect(() => fallbackImageQuota({ ...generation, providerTotalTokens: -1 }, plain)).toThrow(RangeError);
    expect(() => fallbackImageQuota({ ...generation, providerTotalTokens: 0.5 }, plain)).toThrow(RangeError);
  });
});

describe("imageQuotaEstimate", () => {
  it("holds the per-image base of the images requested, at the effective multiplier", () => {
    const rates = { tokenMultiplier: 27.5, groupMultiplier: 1 };
    expect(imageQuotaEstimate({ images: 2, size: undefined, kind: "generation" }, rates)).toBe(275_000n);
    expect(imageQuotaEstimate({ images: 1, size: "4K", kind: "generation" }, rates)).toBe(343_750n);
    expect(imageQuotaEstimate({ images: 1, size: "4K", kind: "edit" }, rates)).toBe(137_500n);
    expect(imageQuotaEstimate({ images: 4, size: undefined, kind: "generation" }, { tokenMultiplier: 0, groupMultiplier: 1 })).toBe(0n);
  });

  it("covers a fallback settlement without provider usage: missing usage is never free", () => {
    const request = { images: 3, size: "2K", kind: "generation" } as const;
    const classified = classifyImageUsage(undefined);
    expect(classified.kind).toBe("fallback");
    const charge = fallbackImageQuota({ ...request, providerTotalTokens: undefined }, plain);
    expect(charge).toBe(15_000n);
    expect(charge).toBe(imageQuotaEstimate(request, plain));
  });
});

describe("imageBillingOf and imageQuota", () => {
  const designated = DEFAULT_NATIVE_IMAGE_MODELS;
  const rates = { tokenMultiplier: 27.5, groupMultiplier: 1 };
  const complete = {
    input_tokens: 100,
    output_tokens: 2000,
    total_tokens: 2100,
    input_tokens_details: { text_tokens: 100, image_tokens: 0 },
  };

  it("prices a designated model's complete usage natively: the spec's check, whatever the image count", () => {
    const billing = imageBillingOf(complete, 3, "gpt-image-1-2025-04-23", designated);
    expect(billing.kind).toBe("native");
    expect(imageQuota(billing, { size: "4K", kind: "generation" }, rates)).toBe(55_459n);
  });

  it("marks a designated model's incomplete usage with the reason and charges the per-image floor", () => {
    const billing = imageBillingOf({ total_tokens: 900 }, 2, "gpt-image-1", designated);
    expect(billing).toEqual({ kind: "fallback", images: 2, totalTokens: 900, reason: "inconsistent" });
    expect(imageQuota(billing, { size: undefined, kind: "generation" }, { tokenMultiplier: 1, groupMultiplier: 1 })).toBe(10_000n);
    const absent = imageBillingOf(undefined, 1, "gpt-image-1", designated);
    expect(absent).toMatchObject({ kind: "fallback", reason: "absent" });
    expect(imageQuota(absent, { size: "4k", kind: "generation" }, { tokenMultiplier: 2, groupMultiplier: 1 })).toBe(25_000n);
  });

  it("bills other models by the per-image rule without a mark, their total able to raise the base only", () => {
    const billing = imageBillingOf(complete, 1, "dall-e-3", designated);
    expect(billing).toEqual({ kind: "fallback", images: 1, totalTokens: 2100, reason: null });
    expect(imageQuota(billing, { size: undefined, kind: "edit" }, { tokenMultiplier: 1, groupMultiplier: 1 })).toBe(5_000n);
    const large = imageBillingOf({ total_tokens: 7_000 }, 1, "flux-pro", designated);
    expect(imageQuota(large, { size: undefined, kind: "generation" }, { tokenMultiplier: 1, groupMultiplier: 1 })).toBe(7_000n);
  });
});
