import { errors } from "../../errors.js";

// Anthropic's `anthropic-beta` request header turns on beta features per request (`context-1m-2025-08-07`,
// `interleaved-thinking-2025-05-14`, …). A native call passes the client's on, so a feature the client asked
// for is not silently dropped; a translated call has no such header (docs/api.md).

export const ANTHROPIC_BETA = "anthropic-beta";

/** Beta names separated by commas (two headers arrive joined by ", "). */
const BETAS = /^[A-Za-z0-9._-]+(?: *, *[A-Za-z0-9._-]+)*$/;
const MAX_LENGTH = 1024;

/** The client's beta list, or undefined without the header; a 400 when it is not a list of beta names. */
export function readAnthropicBeta(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed.length > MAX_LENGTH || !BETAS.test(trimmed)) {
    throw errors.badRequest(`The ${ANTHROPIC_BETA} header must list beta feature names separated by commas.`, null, "invalid_value");
  }
  return trimmed;
}
