import OpenAI from "openai";
import { chatQuota } from "../../src/billing/chat-quota.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { startFaultProxy, type FaultProxy } from "./fault-proxy.js";
import { startTestGateway, type TestGateway } from "./gateway-app.js";
import { countLogWrites } from "./metering-checks.js";

// The gateway of the Anthropic and Gemini client-route tests: one mock upstream (with a key, so each adapter
// must send it the way its vendor's SDK does), a fault proxy in front of it, and the same models for either
// client protocol, so both routes are tested against the same situations.

export const MOCK_KEY = "mock-upstream-key";
const RATES = { tokenMultiplier: 1, completionRatio: 3, cachedRatio: 1, groupMultiplier: 1 };
const UPSTREAM = { anthropic: "mock-claude", gemini: "mock-gemini" } as const;
type Protocol = keyof typeof UPSTREAM;

/** The quota units of a usage at the models' rates (completion tokens cost 3 prompt tokens). */
export const charge = (prompt: number, completion: number) =>
  String(chatQuota({ promptTokens: prompt, completionTokens: completion, cachedTokens: 0 }, RATES));

export interface ProtocolGateway {
  mock: MockUpstream;
  /** In front of the mock for the providers that inject faults (`nativeDown`, `chatDown`, the dropping ones). */
  proxy: FaultProxy;
  gw: TestGateway;
  /** The OpenAI SDK on the mock: what the chat targets answer. */
  directChat: OpenAI;
  /** A fresh user on `plan` and its key. */
  newKey(plan?: string): Promise<{ userId: string; key: string }>;
  close(): Promise<void>;
}

/**
 * Models: `native` (a target of the client's protocol), `org/chat` (an openai target: translated; the slash
 * tests model IDs in paths), `chat-no-usage` (an openai provider that does not ask for stream usage), `to-chat`
 * and `to-native` (first target down, the other protocol answers), `native-drop` and `chat-drop` (streams cut
 * after 2 deltas), `all-down` (503 on its only target), `other` (a target of a protocol the route cannot call).
 * Plans: `free`, and `tiny` (10 units a day).
 */
export async function startProtocolGateway(protocol: Protocol): Promise<ProtocolGateway> {
  const other: Protocol = protocol === "anthropic" ? "gemini" : "anthropic";
  const upstream = UPSTREAM[protocol];
  const mock = await startMockUpstream({ apiKey: MOCK_KEY });
  const proxy: FaultProxy = await startFaultProxy(mock.url);
  // The proxy's base URLs end in /v1, as an openai provider's do; anthropic and gemini base URLs are the root.
  const root = (faults: Record<string, string | number>) => proxy.baseUrl(faults).replace(/\/v1$/, "");
  const provider = (p: string, base_url: string, extra: object = {}) => ({
    protocol: p as Protocol | "openai",
    base_url,
    api_key: MOCK_KEY,
    ...extra,
  });
  const model = (targets: (string | { provider: string; model: string })[], name = upstream) => ({
    kind: "chat" as const,
    upstream: name,
    targets,
    completion_ratio: 3,
  });
  const chat = (id: string) => ({ provider: id, model: "mock-gpt-small" });
  const gw = await startTestGateway({
    config: {
      providers: {
        native: provider(protocol, mock.url),
        nativeDown: provider(protocol, root({ "x-mock-status": 503 })),
        nativeDropping: provider(protocol, root({ "x-mock-drop-after": 2 })),
        chat: provider("openai", mock.baseUrl),
        chatNoUsage: provider("openai", mock.baseUrl, { stream_usage: false }),
        chatDown: provider("openai", proxy.baseUrl({ "x-mock-status": 503 })),
        chatDropping: provider("openai", proxy.baseUrl({ "x-mock-drop-after": 2 })),
        other: provider(other, mock.url),
      },
      models: {
        native: model(["native"]),
        "org/chat": model([chat("chat")]),
        "chat-no-usage": model([chat("chatNoUsage")]),
        "to-chat": model(["nativeDown", chat("chat")]),
        "to-native": model([chat("chatDown"), "native"]),
        "native-drop": model(["nativeDropping"]),
        "chat-drop": model([chat("chatDropping")]),
        "all-down": model(["nativeDown"]),
        other: model(["other"], UPSTREAM[other]),
      },
      plans: { free: { daily_tokens: 1_000_000, context_limit: 128_000 }, tiny: { daily_tokens: 10, context_limit: 128_000 } },
    },
  });
  countLogWrites(gw);
  let users = 0;
  return {
    mock,
    proxy,
    gw,
    directChat: new OpenAI({ apiKey: MOCK_KEY, baseURL: mock.baseUrl, maxRetries: 0 }),
    async newKey(plan = "free") {
      const user = await gw.services.auth.users.create({ email: `${protocol}-${++users}@example.test`, password: "password-123", plan });
      return { userId: user.id, key: (await gw.services.auth.apiKeys.create({ user: user.id })).key };
    },
    async close() {
      await gw.close();
      await proxy.close();
      await mock.close();
    },
  };
}
