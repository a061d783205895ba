import type { ConfigInput } from "./schema.js";

/** The built-in config of `gateway serve --demo`: everything points at the in-process mock upstream. */
export function demoConfig(mockBaseUrl: string, mockApiKey: string): ConfigInput {
  return {
    providers: {
      mock: { protocol: "openai", base_url: mockBaseUrl, api_key: mockApiKey },
      // The evaluator's base URL is the mock's root, not its /v1.
      "mock-eval": { protocol: "systemone", base_url: mockBaseUrl.replace(/\/v1$/, ""), api_key: mockApiKey },
    },
    models: {
      "demo-small": { kind: "chat", upstream: "mock-gpt-small", targets: ["mock"], owned_by: "demo" },
      "demo-large": { kind: "chat", upstream: "mock-gpt-large", targets: ["mock"], owned_by: "demo", token_multiplier: 2 },
      "demo-embed": { kind: "embedding", upstream: "mock-embed", targets: ["mock"], owned_by: "demo" },
      "demo-judge": { kind: "systemone", upstream: "1.13.0", targets: ["mock-eval"], owned_by: "demo", description: "The mock evaluator, version 1.13.0" },
    },
    plans: {
      free: { daily_tokens: 200_000, weekly_resets: 1, context_limit: 128_000 },
      pro: { daily_tokens: 5_000_000, weekly_resets: 3, context_limit: 200_000 },
    },
    default_plan: "free",
  };
}
