import type { Config, ProviderConfig } from "../config/schema.js";
import { createAnthropicAdapter } from "./anthropic/index.js";
import { createGeminiAdapter } from "./gemini/index.js";
import { createOpenAIAdapter } from "./openai/index.js";
import { createSystemOneAdapter } from "./systemone/index.js";
import type { ProviderAdapter } from "./types.js";

/** Every upstream protocol the gateway speaks: one line per provider folder. */
export const adapterFactories: Partial<Record<ProviderConfig["protocol"], (provider: ProviderConfig) => ProviderAdapter>> = {
  openai: createOpenAIAdapter,
  anthropic: createAnthropicAdapter,
  gemini: createGeminiAdapter,
  systemone: createSystemOneAdapter,
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
    if (factory) adapters.set(id, factory(provider));
  }
  return {
    get: (id) => adapters.get(id),
    close: async () => {
      await Promise.all([...adapters.values()].map((a) => a.close()));
    },
  };
}
