import type { HttpBindings } from "@hono/node-server";
import { Hono } from "hono";
import { type Faults, injectFaults, openaiError } from "./faults.js";
import { openaiChatRoute } from "./openai-chat.js";
import { openaiModelsRoute } from "./openai-models.js";

export type MockUpstreamEnv = {
  // Node bindings let a route cut the TCP connection itself (the `x-mock-drop-after` fault).
  Bindings: HttpBindings;
  Variables: { faults: Faults };
};

/** One entry per protocol route file; a new protocol adds its file here and nowhere else. */
const routes: Hono<MockUpstreamEnv>[] = [openaiModelsRoute, openaiChatRoute];

/**
 * The fake provider (DESIGN.md §4 "Mock upstream"): deterministic answers in each vendor's wire shape, plus
 * header-driven faults (./faults.ts). Without `apiKey` it accepts any or no credentials.
 */
export function createMockUpstreamApp(opts: { apiKey?: string } = {}): Hono<MockUpstreamEnv> {
  const app = new Hono<MockUpstreamEnv>();

  app.onError((err, c) => openaiError(c, 500, `Mock upstream failed: ${err.message}`, { type: "server_error" }));
  app.notFound((c) => openaiError(c, 404, `Invalid URL (${c.req.method} ${c.req.path})`));

  const { apiKey } = opts;
  if (apiKey !== undefined) {
    app.use("*", async function mockAuth(c, next) {
      if (c.req.header("authorization") !== `Bearer ${apiKey}`) {
        return openaiError(c, 401, "Incorrect API key provided.", { code: "invalid_api_key" });
      }
      await next();
    });
  }
  app.use("*", injectFaults());

  for (const route of routes) app.route("/", route);
  return app;
}
