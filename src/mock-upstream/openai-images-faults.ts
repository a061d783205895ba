/**
 * The image routes' own fault choices (docs/mock-upstream.md, "Images"), parsed with the other fault headers by
 * ./faults.ts. Kept apart from the answers that use them so that the context's types import no route module.
 */

/**
 * `x-mock-image`: what the image items hold instead of a good base64 image. `url*` kinds only change JSON
 * answers (stream events carry base64 only).
 */
export const IMAGE_KINDS = [
  "gif",
  "bmp",
  "svg",
  "not-image",
  "invalid-base64",
  "data-uri",
  "url",
  "url-404",
  "url-redirect-private",
] as const;
export type ImageKind = (typeof IMAGE_KINDS)[number];

/** `x-mock-image-usage`: `cached` adds `input_tokens_details.cached_tokens`, `partial` leaves the details out. */
export const IMAGE_USAGES = ["cached", "partial"] as const;
export type ImageUsageKind = (typeof IMAGE_USAGES)[number];
