import { DEFAULT_NATIVE_IMAGE_MODELS } from "../billing/image-quota.js";
import type { ConfigInput } from "./schema.js";

/**
 * The built-in config of `gateway serve --demo`: everything points at the in-process mock upstream (`mockUrl`,
 * its root), once per protocol, so every inference route can be tried: the openai models natively on the OpenAI
 * routes and translated on /messages and /compatible, demo-claude natively on /messages, demo-gemini natively on
 * /compatible and translated on /v1/chat/completions, demo-judge on the evaluation routes. Every provider accepts a client's own key (the mock's, `mockApiKey`) to show bring-your-own keys.
 */
export function demoConfig(mockUrl: string, mockApiKey: string): ConfigInput {
  const mock = { api_key: mockApiKey, allow_byok: true };
  return {
    providers: {
      mock: { protocol: "openai", base_url: `${mockUrl}/v1`, ...mock },
      "mock-anthropic": { protocol: "anthropic", base_url: mockUrl, ...mock },
      "mock-gemini": { protocol: "gemini", base_url: mockUrl, ...mock },
      "mock-eval": { protocol: "systemone", base_url: mockUrl, ...mock },
      "mock-video": { protocol: "video", base_url: `${mockUrl}/v1`, api_key: mockApiKey },
      // A provider that is down (nothing listens on the discard port): demo-broken's requests fail on the server's
      // side, so the support flow and the incidents can be seen on the demo (docs/support.md, "Try it").
      "mock-down": { protocol: "openai", base_url: "http://127.0.0.1:9/v1", api_key: mockApiKey },
    },
    models: {
      "demo-small": { kind: "chat", upstream: "mock-gpt-small", targets: ["mock"], owned_by: "demo" },
      "demo-large": { kind: "chat", upstream: "mock-gpt-large", targets: ["mock"], owned_by: "demo", token_multiplier: 2 },
      "demo-broken": { kind: "chat", upstream: "mock-gpt-small", targets: ["mock-down"], owned_by: "demo" },
      "demo-embed": { kind: "embedding", upstream: "mock-embed", targets: ["mock"], owned_by: "demo" },
      // Priced by its native usage (gpt-image-1 is a designated model): POST /v1/images/generations and /edits.
      "demo-image": { kind: "image", upstream: "gpt-image-1", targets: ["mock"], owned_by: "demo" },
      // The same image routes on Gemini's generateContent (docs/api.md, "Images"), priced by its native usage: its
      // upstream is designated below.
      "demo-gemini-image": { kind: "image", upstream: "gemini-2.5-flash-image", targets: ["mock-gemini"], owned_by: "demo" },
      "demo-claude": { kind: "chat", upstream: "mock-claude", targets: ["mock-anthropic"], owned_by: "demo" },
      "demo-gemini": { kind: "chat", upstream: "mock-gemini", targets: ["mock-gemini"], owned_by: "demo" },
      "demo-judge": {
        kind: "systemone",
        upstream: "1.13.0",
        targets: ["mock-eval"],
        owned_by: "demo",
        description: "The mock evaluator, version 1.13.0",
        // So that a reseller key (`gateway keys create --kind reseller`, then `gateway reseller credit`) can try
        // pay-as-you-go, under the alias too.
        reseller_price: { input_usd_per_million: 0.1 },
        reseller_aliases: ["demo-judge-resale"],
      },
      // Video jobs (POST /v1/video/generations): 100 units per second of video, 5-second videos by default.
      "demo-video": {
        kind: "video",
        upstream: "mock-video",
        targets: ["mock-video"],
        owned_by: "demo",
        video_price: { units_per_second: 100, default_seconds: 5, max_seconds: 20 },
      },
      // The same route on OpenAI's video API (the mock's /v1/videos): clips of 4, 8 or 12 seconds, one per job.
      "demo-sora": {
        kind: "video",
        upstream: "sora-2",
        targets: ["mock"],
        owned_by: "demo",
        video_price: { units_per_second: 100, default_seconds: 4, max_seconds: 12 },
      },
    },
    plans: {
      free: { daily_tokens: 200_000, weekly_resets: 1, context_limit: 128_000 },
      pro: { daily_tokens: 5_000_000, weekly_resets: 3, context_limit: 200_000 },
    },
    default_plan: "free",
    // The mock answers some images with links to itself, and serves its videos, on loopback: downloaded only when allowed.
    media: {
      images: { native_usage_models: [...DEFAULT_NATIVE_IMAGE_MODELS, "gemini-2.5-flash-image"] },
      download: { allow_private: ["127.0.0.1", "::1"] },
    },
  };
}
