import type { Config } from "../config/schema.js";

// Label values are bounded: each distinct value is a time series kept by every Prometheus that scrapes us, so a
// value a client chooses (a model ID it made up) must never become one. Anything outside the config's own IDs
// becomes OTHER.

/** A value outside the bounded set: a model or provider ID the config does not name. */
export const OTHER = "other";
/** No value: a request no metered route saw (another route, or refused before one), so it has no model. */
const NONE = "none";

/** Maps a value to itself when it is one of `allowed`, else to OTHER; no value (undefined, "") to NONE. */
export function boundedLabel(allowed: Iterable<string>): (value: string | undefined) => string {
  const known = new Map<string, string>();
  for (const value of allowed) known.set(value, value);
  return (value) => (value === undefined || value === "" ? NONE : (known.get(value) ?? OTHER));
}

/** The public model IDs clients may send: every model's ID and its reseller aliases. */
export function publicModelIds(config: Config): string[] {
  return Object.entries(config.models).flatMap(([id, model]) => [id, ...model.reseller_aliases]);
}

export const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const;

/** The index of `status`'s class in STATUS_CLASSES (a 499 the gateway answers for a client gone is 4xx). */
export function statusClassIndex(status: number): number {
  const index = Math.floor(status / 100) - 1;
  return index < 0 ? 0 : index > 4 ? 4 : index;
}

/**
 * Why a target was left for the next: the UpstreamError's failure, the status's class for a status failure (only
 * 429 and 5xx ever fall back), OTHER for anything else.
 */
export function fallbackCause(failure: string, status: number | null): string {
  if (failure === "status") return status === 429 ? "status_429" : status !== null && status >= 500 ? "status_5xx" : OTHER;
  return failure === "connect" || failure === "timeout" || failure === "protocol" ? failure : OTHER;
}
