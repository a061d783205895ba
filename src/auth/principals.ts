// Who is calling, as established by exactly one auth middleware per route family (middleware.ts). Declared
// here, with the auth that sets them, and added to the request context's variables by augmentation: the HTTP
// toolkit (src/server) sits below auth and cannot name them.

/** A caller with an API key (the inference routes). */
export interface ApiKeyPrincipal {
  keyId: string;
  userId: string;
  kind: "inference" | "reseller";
  plan: string;
  /** How many times the user's plan was changed (users.plan_revision): the ledger keeps the newest view of a plan. */
  planRevision: number;
  /** Public model IDs the key is limited to; null = whatever the plan allows. */
  models: string[] | null;
  pricingGroup: string;
}

/** What an embed token allows besides the key it speaks for (src/auth/embed-tokens.ts). */
export interface EmbedGrant {
  model: string;
  /** The digest of the one request's parameters it is bound to (the route computes it); null: any prompt. */
  params: string | null;
}

/** A caller with a login session (the user and admin routes). */
export interface SessionPrincipal {
  sessionId: string;
  userId: string;
  email: string;
  role: "user" | "admin";
  plan: string;
  planRevision: number;
  expiresAt: Date;
}

declare module "../server/context.js" {
  interface AppVariables {
    apiKey: ApiKeyPrincipal;
    session: SessionPrincipal;
    /** Set with `apiKey` when an embed token authenticated the request (GET /embed/image:{model}). */
    embedGrant: EmbedGrant;
  }
}
