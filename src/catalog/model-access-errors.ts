import { GatewayError, errors } from "../errors.js";

// The refusals of model access (./model-access.ts). The catalog sits below auth and metering, so it words them with
// src/errors.ts itself; the metering path's own errors (src/metering/metered-errors.ts) lend the unknown model's.

/**
 * The header of a client's own upstream key (bring-your-own), as documented: named here because which targets such
 * a key may use is the catalog's rule; read by src/metering/upstream-key.ts.
 */
export const UPSTREAM_KEY_HEADER_NAME = "X-Upstream-Api-Key";

export const modelAccessErrors = {
  modelNotFound: (model: string) =>
    new GatewayError({
      message: `The model '${model}' does not exist; GET /v1/models lists the IDs this key may use.`,
      code: "model_not_found",
      param: "model",
    }),
  wrongKind: (model: string, kind: string) =>
    errors.badRequest(`The model '${model}' is a ${kind} model and cannot be used on this route.`, "model", "model_not_supported"),
  modelForbidden: (model: string, why: "plan" | "key") =>
    new GatewayError({
      message: `This ${why === "plan" ? "plan" : "API key"} may not use the model '${model}'.`,
      code: "model_not_allowed",
      param: "model",
    }),
  /** None of the model's targets speaks a protocol this route can call. */
  notServedHere: (model: string, protocol: string, route: string) =>
    errors.badRequest(
      `The model '${model}' is served over the ${protocol} protocol, which ${route} cannot call; docs/api.md lists which routes serve which models.`,
      "model",
      "model_not_supported",
    ),
  /** A request carrying the client's own upstream key, for a model none of whose providers accepts one. */
  upstreamKeyNotAccepted: (model: string) =>
    errors.badRequest(
      `No provider of the model '${model}' accepts a client's own upstream key; send the request without the ${UPSTREAM_KEY_HEADER_NAME} header.`,
      null,
      "upstream_key_not_accepted",
    ),
};
