import type { HttpBindings } from "@hono/node-server";
import type { Logger } from "pino";

/** Who is calling, as established by exactly one auth middleware per route family. */
export interface ApiKeyPrincipal {
  keyId: string;
  userId: string;
  kind: "inference" | "reseller";
  plan: string;
  /** Public model IDs the key is limited to; null = whatever the plan allows. */
  models: string[] | null;
  pricingGroup: string;
}

export interface SessionPrincipal {
  sessionId: string;
  userId: string;
  email: string;
  role: "user" | "admin";
  plan: string;
  expiresAt: Date;
}

export interface AppVariables {
  requestId: string;
  /** The process logger; requestLog(c) binds it to the request id. */
  logger: Logger;
  apiKey: ApiKeyPrincipal;
  session: SessionPrincipal;
}

export interface AppEnv {
  Bindings: HttpBindings;
  Variables: AppVariables;
}
