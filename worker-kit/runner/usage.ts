import type { WorkerUsage } from "../wire/support.js";
import type { UsageReport } from "./task.js";

// A job's usage summed from its task's reports. Costs are decimal strings added exactly, as integers of 10^-9 USD
// (the wire format's finest digit), never as floats; one report without a known cost makes the sum unknown for good.

const SCALE_DIGITS = 9;
const SCALE = 10n ** BigInt(SCALE_DIGITS);
const DECIMAL = /^(\d{1,12})(?:\.(\d{1,9}))?$/;

export const EMPTY_USAGE: WorkerUsage = { model_calls: 0, tool_calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: "0" };

export function addUsage(total: WorkerUsage, report: UsageReport): WorkerUsage {
  const known = total.cost_usd !== null && report.cost_usd !== undefined && report.cost_usd !== null;
  return {
    model_calls: total.model_calls + count(report.model_calls, "model_calls"),
    tool_calls: total.tool_calls + count(report.tool_calls, "tool_calls"),
    input_tokens: total.input_tokens + count(report.input_tokens, "input_tokens"),
    output_tokens: total.output_tokens + count(report.output_tokens, "output_tokens"),
    cost_usd: known ? addDecimal(total.cost_usd!, report.cost_usd!) : null,
  };
}

/** The exact sum of two non-negative decimal strings such as "0.0125", trailing zeros of the fraction dropped. */
export function addDecimal(a: string, b: string): string {
  return formatNanos(toNanos(a) + toNanos(b));
}

function toNanos(value: string): bigint {
  const match = DECIMAL.exec(value);
  if (!match) throw new TypeError(`cost_usd must be a decimal string such as "0.0123", not ${JSON.stringify(value)}`);
  const fraction = (match[2] ?? "").padEnd(SCALE_DIGITS, "0");
  return BigInt(match[1]!) * SCALE + BigInt(fraction);
}

function formatNanos(nanos: bigint): string {
  const whole = (nanos / SCALE).toString();
  const fraction = (nanos % SCALE).toString().padStart(SCALE_DIGITS, "0").replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : whole;
}

function count(value: number | undefined, field: string): number {
  if (value === undefined) return 0;
  // A bad count would make the gateway refuse the whole completion: the task learns it at the call that was wrong.
  if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`${field} must be a non-negative integer, not ${value}`);
  return value;
}
