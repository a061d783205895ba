import { Hono } from "hono";
import { anthropicMessagesRoute } from "./anthropic-messages.js";
import type { MockUpstreamEnv } from "./context.js";
import { dialectFor } from "./dialects.js";
import { injectFaults } from "./faults.js";
import { geminiGenerateRoute } from "./gemini-generate.js";
import { openaiChatRoute } from "./openai-chat.js";
import { openaiEmbeddingsRoute } from "./openai-embeddings.js";
import { openaiImagesRoute } from "./openai-images.js";
import { MOCK_IMAGES_PATH } from "./openai-images-output.js";
import { openaiModelsRoute } from "./openai-models.js";
import { openaiResponsesRoute } from "./openai-responses.js";
import { openaiVideosRoute } from "./openai-videos.js";
import { systemoneRoute } from "./systemone.js";
import { MOCK_VIDEOS_PATH, videoRoute } from "./video.js";

/** One entry per route file; a new route adds its file here (a new vendor also adds its dialect in ./dialects.ts). */
const routes: Hono<MockUpstreamEnv>[] = [
  openaiModelsRoute,
  openaiChatRoute,
  openaiResponsesRoute,
  openaiEmbeddingsRoute,
  openaiImagesRoute,
  openaiVideosRoute,
  anthropicMessagesRoute,
  geminiGenerateRoute,
  systemoneRoute,
  videoRoute,
];

/**
 * The fake provider (docs/architecture.md, "Rules"): deterministic answers in each vendor's wire shape, plus
 * header-driven faults (./faults.ts). With `apiKey`, each route takes the key where its vendor's SDK sends it
 * (./dialects.ts); without, it accepts any or no credentials.
 */
export function createMockUpstreamApp(opts: { apiKey?: string } = {}): Hono<MockUpstreamEnv> {
  const app = new Hono<MockUpstreamEnv>();

  app.onError((err, c) => dialectFor(c.req.path).error(c, 500, `Mock upstream failed: ${err.message}`));
  app.notFound((c) => dialectFor(c.req.path).error(c, 404, `Invalid URL (${c.req.method} ${c.req.path})`));

  const { apiKey } = opts;
  if (apiKey !== undefined) {
    app.use("*", async function mockAuth(c, next) {
      // The images an answer links to are fetched without the provider's key, as signed links are.
      if (c.req.path.startsWith(`${MOCK_IMAGES_PATH}/`) || c.req.path.startsWith(`${MOCK_VIDEOS_PATH}/`)) return next();
      const dialect = dialectFor(c.req.path);
      if (!dialect.hasKey(c, apiKey)) return dialect.unauthorized(c);
      await next();
    });
  }
  app.use("*", injectFaults());

  for (const route of routes) app.route("/", route);
  return app;
}
