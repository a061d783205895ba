import { asObject, tokenCount } from "../json-guards.js";
import type { StreamUsageReader, UsageReport } from "../types.js";
import { extended } from "../../objects.js";

// Anthropic splits the prompt in three disjoint parts: input_tokens (not cached), cache_creation_input_tokens
// (written to the cache by this request) and cache_read_input_tokens. The gateway's promptTokens is their sum;
// only cache reads are cachedTokens. Cache writes count as ordinary prompt tokens: the gateway has no price for
// them of its own, and Anthropic bills them at least at the input price.

function fromParts(input: number, usage: Record<string, unknown>, output: number): UsageReport {
  const creation = tokenCount(usage.cache_creation_input_tokens) ?? 0;
  const read = tokenCount(usage.cache_read_input_tokens) ?? 0;
  return { promptTokens: input + creation + read, completionTokens: output, cachedTokens: read };
}

/** A Message's `usage` → the gateway's usage; null when input_tokens or output_tokens is unusable. */
export function convertAnthropicUsage(usage: unknown): UsageReport | null {
  const u = asObject(usage);
  if (!u) return null;
  const input = tokenCount(u.input_tokens);
  const output = tokenCount(u.output_tokens);
  return input === null || output === null ? null : fromParts(input, u, output);
}

/**
 * message_start carries the prompt's usage (and a provisional output count); message_delta the cumulative
 * output_tokens and, from newer API versions, cumulative prompt parts, which then replace message_start's.
 */
export const readAnthropicStreamUsage: StreamUsageReader = (data, prior) => {
  if (data.type === "message_start") return convertAnthropicUsage(asObject(data.message)?.usage) ?? prior;
  if (data.type !== "message_delta") return prior;
  const u = asObject(data.usage);
  const output = tokenCount(u?.output_tokens);
  if (!u || output === null) return prior;
  const input = tokenCount(u.input_tokens);
  if (input !== null) return fromParts(input, u, output);
  return prior && extended(prior, { completionTokens: output });
};

/** The event with a Messages stream's final counts: message_start's output count is only provisional. */
export const isFinalAnthropicUsageEvent = (data: Record<string, unknown>): boolean => data.type === "message_delta";
