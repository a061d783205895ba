import type { Config, ProviderConfig, UpstreamAnswerLimits } from "../config/schema.js";
import { createAnthropicAdapter } from "./anthropic/index.js";
import { createGeminiAdapter } from "./gemini/index.js";
import { createOpenAIAdapter } from "./openai/index.js";
import { createSystemOneAdapter } from "./systemone/index.js";
import { createVideoAdapter } from "./video/index.js";
import type { ProviderAdapter } from "./types.js";

/** Builds one provider's adapter; each capability reads its JSON answers under its own cap from `limits`. */
export type AdapterFactory = (provider: ProviderConfig, limits: UpstreamAnswerLimits) => ProviderAdapter;

/** Every upstream protocol the gateway speaks: one line per provider folder. */
export const adapterFactories: Partial<Record<ProviderConfig["protocol"], AdapterFactory>> = {
  openai: createOpenAIAdapter,
  anthropic: createAnthropicAdapter,
  gemini: createGeminiAdapter,
  systemone: createSystemOneAdapter,
  video: createVideoAdapter,
};

export interface Providers {
  get(providerId: string): ProviderAdapter | undefined;
  close(): Promise<void>;
}

/** One adapter (and keep-alive pool) per configured provider, built once per config load. */
export function createProviders(config: Config): Providers {
  const adapters = new Map<string, ProviderAdapter>();
  for (const [id, provider] of Object.entries(config.providers)) {
    const factory = adapterFactories[provider.protocol];
    if (factory) adapters.set(id, factory(provider, config.limits.upstream_answer_bytes));
  }
  return {
    get: (id) => adapters.get(id),
    close: async () => {
      await Promise.all([...adapters.values()].map((a) => a.close()));
    },
  };
}
