/**
 * `x-mock-gemini-image` (docs/mock-upstream.md, "Gemini images"): how a generateContent answer asking for images
 * goes wrong instead. Kept apart from the answers that use it so that the context's types import no route module.
 */
export const GEMINI_IMAGE_FAULTS = ["blocked", "image-safety", "no-image", "no-usage", "no-modality", "not-an-image"] as const;
export type GeminiImageFault = (typeof GEMINI_IMAGE_FAULTS)[number];
