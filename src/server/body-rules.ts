import type { BodyBudget } from "./body-budget.js";

/**
 * What bounds every body the app reads besides its route's cap (docs/security.md, "Connections and request
 * bodies"); set on each request by `bodyRules`. A hand-built app without them reads bodies under the cap alone.
 */
export interface BodyRules {
  /** The process-wide budget every body reserves from, unless its route reads under a budget of its own. */
  budget: BodyBudget;
  /** From the start of its reading, a body must have ended within this long. */
  timeoutMs: number;
  /** After `graceMs`, a body arriving slower than this on average is cut (0: no minimum). */
  minBytesPerSecond: number;
  graceMs: number;
  maxJsonDepth: number;
}

/**
 * The caps a route picks from where it reads its body (docs/security.md has the table): `small` for bodies of a
 * few fields (`server.small_body_bytes`), `large` for bodies that carry user text (`server.max_body_bytes`).
 */
export interface BodyCaps {
  small: number;
  large: number;
}
