import { Hono } from "hono";
import type { MockUpstreamEnv } from "./context.js";

/** Fixed list and fixed timestamps, so a model listing is byte-identical on every run. */
export const MOCK_OPENAI_MODELS = [
  { id: "mock-gpt-small", object: "model", created: 1_704_067_200, owned_by: "mock-upstream" },
  { id: "mock-gpt-large", object: "model", created: 1_706_745_600, owned_by: "mock-upstream" },
  { id: "mock-embed", object: "model", created: 1_709_251_200, owned_by: "mock-upstream" },
] as const;

/** OpenAI `GET /v1/models` → `ListModelsResponse`. */
export const openaiModelsRoute = new Hono<MockUpstreamEnv>().get("/v1/models", (c) => c.json({ object: "list", data: MOCK_OPENAI_MODELS }));
