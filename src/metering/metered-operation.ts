import type { OperationDescription } from "../openapi/operation.js";
import { METERED_ERROR_CODES, UPSTREAM_KEY_HEADER_NAME } from "./metered-errors.js";

/** The request header of a bring-your-own key, read on every billed route that calls a provider with it. */
export const byokHeader = {
  [UPSTREAM_KEY_HEADER_NAME]: "Your own key for the model's provider (bring-your-own key), used instead of the gateway's.",
};

/**
 * A billed route's operation: an API key's, answering the metering path's errors (and any of its own it names),
 * taking a bring-your-own key (unless the operation names its own headers), its answer naming its committed
 * charge (docs/api.md, "Charges").
 */
export function meteredOperation(
  tag: "Inference" | "Media",
  op: Omit<OperationDescription, "access" | "tag" | "errors"> & Partial<Pick<OperationDescription, "errors">>,
): OperationDescription {
  const described = Object.assign({ access: "apiKey", tag, errors: METERED_ERROR_CODES, headers: byokHeader } as const, op);
  return op.ok ? Object.assign(described, { ok: Object.assign({ charged: true }, op.ok) }) : described;
}
