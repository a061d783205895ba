import type { HttpBindings } from "@hono/node-server";
import type { Logger } from "pino";
import type { BodyRules } from "./body-rules.js";

/**
 * What the toolkit's middleware sets on every request. Higher layers add theirs by augmenting this interface
 * (src/auth/principals.ts adds the caller), so that this folder imports none of them.
 */
export interface AppVariables {
  requestId: string;
  /** The process logger; requestLog(c) binds it to the request id. */
  logger: Logger;
  /** What a metered route learnt of its request (src/metering/metered-handler.ts), for the request counter's labels. */
  metered?: { readonly modelId: string; readonly clientProtocol: string };
  /** What bounds the request's body besides its route's cap (src/server/body.ts). */
  bodyRules?: BodyRules;
}

export interface AppEnv {
  Bindings: HttpBindings;
  Variables: AppVariables;
}
