import { asObject, tokenCount } from "../json-guards.js";
import type { UsageReport } from "../types.js";
import { UpstreamError } from "../types.js";

/**
 * The evaluator's `usage` {input_tokens, output_tokens} → the gateway's usage. Absent (or null): null, and the
 * gateway counts the input itself. Present but without two non-negative integers: the answer is invalid, as
 * the client's usage must hold exactly those (spec "the service request"). Zeros are zeros.
 */
export function convertSystemOneUsage(usage: unknown, status: number): UsageReport | null {
  if (usage === undefined || usage === null) return null;
  const u = asObject(usage);
  const input = tokenCount(u?.input_tokens);
  const output = tokenCount(u?.output_tokens);
  if (input === null || output === null) throw new UpstreamError("protocol", status);
  return { promptTokens: input, completionTokens: output, cachedTokens: 0 };
}
