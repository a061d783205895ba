import type { Charge } from "../request-meter.js";

// How a stream tells its client what it was charged (docs/api.md, "Charges"): in the final usage event, where the
// client's protocol has one whose usage object takes members of ours (OpenAI's and Anthropic's are open objects),
// else as an SSE comment before the end, which every SSE client skips. Gemini's usageMetadata is a protobuf
// message: a member it does not define would be refused by a strict client, so Gemini streams get the comment, as
// image edit streams do (their bytes are the upstream's). The stream's end
// is held until the charge is committed (stream-relay.ts), so what it says is exact.

/** Where a client protocol's final usage event carries the charge. */
export interface ChargeCarrier {
  /** The usage object of an event's data that can carry the charge, if the event has one. */
  usageOf(data: Record<string, unknown>): Record<string, unknown> | undefined;
  /** The members it is written as: quota units, and the USD of a reseller key. */
  units: string;
  usd: string;
}

const objectAt = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

/** OpenAI chat: the usage chunk's `usage`. */
export const chatCharge: ChargeCarrier = { usageOf: (d) => objectAt(d.usage), units: "gateway_charge", usd: "gateway_charge_usd" };

/** OpenAI Responses: the terminal event's `response.usage`. */
export const responsesCharge: ChargeCarrier = {
  usageOf: (d) => objectAt(objectAt(d.response)?.usage),
  units: "gateway_charge",
  usd: "gateway_charge_usd",
};

/** Anthropic Messages: `message_delta`'s `usage`. */
export const messagesCharge: ChargeCarrier = {
  usageOf: (d) => (d.type === "message_delta" ? objectAt(d.usage) : undefined),
  units: "gateway_charge",
  usd: "gateway_charge_usd",
};

/** A JSON number while it is exact, else its decimal text. */
const exact = (n: bigint): number | string => (n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : String(n));

/** The SSE comment naming the charge, as the headers of a JSON answer do. */
export function chargeComment(charge: Charge): string {
  return `: x-gateway-charge=${charge.units}${charge.usd === null ? "" : ` x-gateway-charge-usd=${charge.usd}`}\n\n`;
}

/**
 * The stream's closing text with its charge written into its last event that can carry it (`carrier`), or after a
 * comment naming it when none can (no carrier, or no usage event in the text).
 */
export function withCharge(text: string, charge: Charge, carrier: ChargeCarrier | null): string {
  if (carrier && text) {
    const frames = text.split("\n\n");
    for (let i = frames.length - 1; i >= 0; i--) {
      const edited = chargedFrame(frames[i]!, charge, carrier);
      if (edited === undefined) continue;
      frames[i] = edited;
      return frames.join("\n\n");
    }
  }
  return chargeComment(charge) + text;
}

/** One SSE frame with the charge in its usage, or undefined when its data has none. */
function chargedFrame(frame: string, charge: Charge, carrier: ChargeCarrier): string | undefined {
  const lines = frame.split("\n");
  const at = lines.findIndex((line) => line.startsWith("data:"));
  if (at < 0) return undefined;
  const payload = lines[at]!.slice(5).trimStart();
  if (!payload.startsWith("{")) return undefined;
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(payload) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const usage = carrier.usageOf(data);
  if (!usage) return undefined;
  usage[carrier.units] = exact(charge.units);
  if (charge.usd !== null) usage[carrier.usd] = charge.usd;
  lines[at] = `data: ${JSON.stringify(data)}`;
  return lines.join("\n");
}
