import { beforeAll, describe, expect, it } from "vitest";
import { geminiModelPath, geminiSseRules } from "../../src/providers/gemini/generate-content.js";
import { createGeminiAdapter } from "../../src/providers/gemini/index.js";
import type { ProviderAdapter, Target } from "../../src/providers/types.js";
import { drain, jsonAnswer, sseAnswer, useRecordingAdapter, type RecordingUpstream } from "../helpers/recording-upstream.js";

let upstream: RecordingUpstream;
let adapter: ProviderAdapter;
let target: Target;
const fixture = useRecordingAdapter(createGeminiAdapter, "gemini", (url) => url, { providerId: "google", upstreamModel: "gemini-x" });
beforeAll(() => void ({ upstream, adapter, target } = fixture));

const options = () => ({ target, signal: AbortSignal.timeout(5000) });
const chunk = (data: object) => `data: ${JSON.stringify(data)}\r\n\r\n`;
const body = { contents: [{ role: "user", parts: [{ text: "hi" }] }] };

describe("Gemini adapter", () => {
  it("posts generateContent to {base_url}/v1beta/models/{model} with x-goog-api-key, usage normalised", async () => {
    upstream.answers = [
      jsonAnswer({
        candidates: [],
        usageMetadata: { promptTokenCount: 8, candidatesTokenCount: 3, thoughtsTokenCount: 2, cachedContentTokenCount: 4 },
      }),
    ];
    const result = await adapter.generateContent!(body, options());
    expect(result).toMatchObject({ kind: "json", usage: { promptTokens: 8, completionTokens: 5, cachedTokens: 4 } });
    const [req] = upstream.requests;
    expect(req).toMatchObject({ method: "POST", path: "/v1beta/models/gemini-x:generateContent" });
    expect(req!.headers).toMatchObject({ "x-goog-api-key": "provider-key", "content-type": "application/json" });
    expect(req!.headers.authorization).toBeUndefined();
    expect(JSON.parse(req!.body)).toEqual(body);
  });

  it("streams from :streamGenerateContent?alt=sse with a client's own key until the body ends after a finish reason", async () => {
    const chunks = [
      { candidates: [{ content: { role: "model", parts: [{ text: "Hel" }] }, index: 0 }] },
      {
        candidates: [{ content: { role: "model", parts: [{ text: "lo" }] }, finishReason: "STOP", index: 0 }],
        usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 2 },
      },
    ];
    upstream.answers = [sseAnswer(chunks.map(chunk).join(""))];
    const result = await adapter.streamGenerateContent!(body, { ...options(), apiKey: "byok" });
    expect(result.kind).toBe("stream");
    expect(((await drain(result.batches)) as { data: unknown }[]).map((e) => e.data)).toEqual(chunks);
    expect(upstream.requests[0]).toMatchObject({ path: "/v1beta/models/gemini-x:streamGenerateContent?alt=sse" });
    expect(upstream.requests[0]!.headers).toMatchObject({ "x-goog-api-key": "byok", accept: "text/event-stream" });
  });

  it("treats a stream that ends without a finish reason as dropped", async () => {
    upstream.answers = [sseAnswer(chunk({ candidates: [{ content: { parts: [{ text: "x" }] } }] }))];
    const result = await adapter.streamGenerateContent!(body, options());
    await expect(drain(result.batches)).rejects.toMatchObject({ failure: "protocol" });
  });

  it("answers a non-2xx with an UpstreamError carrying its retry headers", async () => {
    upstream.answers = [
      { status: 429, headers: { "content-type": "application/json", "retry-after": "7" }, body: '{"error":{"code":429}}' },
    ];
    await expect(adapter.generateContent!(body, options())).rejects.toMatchObject({ status: 429, retryHeaders: { "retry-after": "7" } });
  });
});

describe("geminiModelPath", () => {
  it("prefixes bare IDs, keeps full names and encodes every segment", () => {
    expect(geminiModelPath("gemini-2.5-flash")).toBe("models/gemini-2.5-flash");
    expect(geminiModelPath("models/gemini-2.5-flash")).toBe("models/gemini-2.5-flash");
    expect(geminiModelPath("tunedModels/my-model")).toBe("tunedModels/my-model");
    expect(geminiModelPath("x?y#z")).toBe("models/x%3Fy%23z");
    expect(geminiModelPath("a:b")).toBe("models/a%3Ab");
  });
});

describe("geminiSseRules", () => {
  it("sees completion in a finish reason or a blocked prompt", () => {
    expect(geminiSseRules.isComplete!({ candidates: [{ finishReason: "MAX_TOKENS" }] })).toBe(true);
    expect(geminiSseRules.isComplete!({ promptFeedback: { blockReason: "SAFETY" } })).toBe(true);
    expect(geminiSseRules.isComplete!({ candidates: [{ content: {} }] })).toBe(false);
    expect(geminiSseRules.isComplete!({ candidates: "x" })).toBe(false);
  });
  it("raises error chunks by their code, else as a bad gateway", () => {
    expect(geminiSseRules.toError!({ error: { code: 503, status: "UNAVAILABLE" } })).toMatchObject({ status: 503, retryable: true });
    expect(geminiSseRules.toError!({ error: { code: "x" } })).toMatchObject({ status: 502 });
    expect(geminiSseRules.toError!({ candidates: [] })).toBeNull();
  });
});
