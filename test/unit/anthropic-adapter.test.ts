import { beforeAll, describe, expect, it } from "vitest";
import { createAnthropicAdapter } from "../../src/providers/anthropic/index.js";
import { anthropicSseRules } from "../../src/providers/anthropic/messages.js";
import type { ProviderAdapter, Target } from "../../src/providers/types.js";
import { drain, jsonAnswer, sseAnswer, useRecordingAdapter, type RecordingUpstream } from "../helpers/recording-upstream.js";

let upstream: RecordingUpstream;
let adapter: ProviderAdapter;
let target: Target;
// A base URL with a path prefix (a proxy in front of Anthropic) keeps it: {base_url}/v1/messages.
const fixture = useRecordingAdapter(createAnthropicAdapter, "anthropic", (url) => `${url}/anthropic`, {
  providerId: "claude",
  upstreamModel: "claude-x",
});
beforeAll(() => void ({ upstream, adapter, target } = fixture));

const options = () => ({ target, signal: AbortSignal.timeout(5000) });
const frame = (data: { type: string }) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

describe("Anthropic adapter", () => {
  it("posts to {base_url}/v1/messages with x-api-key and anthropic-version, usage normalised", async () => {
    upstream.answers = [
      jsonAnswer({
        id: "msg_1",
        type: "message",
        usage: { input_tokens: 10, output_tokens: 4, cache_read_input_tokens: 6, cache_creation_input_tokens: 2 },
      }),
    ];
    const body = { model: "claude-x", max_tokens: 10, messages: [{ role: "user", content: "hi" }], metadata: { user_id: "u" } };
    const result = await adapter.messages!(body, options());
    expect(result).toMatchObject({ kind: "json", status: 200, usage: { promptTokens: 18, completionTokens: 4, cachedTokens: 6 } });
    const [req] = upstream.requests;
    expect(req).toMatchObject({ method: "POST", path: "/anthropic/v1/messages" });
    expect(req!.headers).toMatchObject({
      "x-api-key": "provider-key",
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    });
    expect(req!.headers.authorization).toBeUndefined();
    expect(JSON.parse(req!.body)).toEqual(body);
  });

  it("streams until message_stop with a client's own key, keeping event names", async () => {
    const events = [
      { type: "message_start", message: { usage: { input_tokens: 3, output_tokens: 1 } } },
      { type: "ping" },
      { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 5 } },
      { type: "message_stop" },
    ];
    upstream.answers = [sseAnswer(events.map(frame).join("") + frame({ type: "late" }))];
    const result = await adapter.messages!(
      { model: "claude-x", max_tokens: 5, messages: [], stream: true },
      { ...options(), apiKey: "byok" },
    );
    if (result.kind !== "stream") throw new Error("expected a stream");
    const got = (await drain(result.batches)) as { data: { type: string }; event: string }[];
    expect(got.map((e) => e.event)).toEqual(["message_start", "ping", "message_delta", "message_stop"]);
    expect(got.map((e) => e.data)).toEqual(events);
    expect(upstream.requests[0]!.headers).toMatchObject({ "x-api-key": "byok", accept: "text/event-stream" });
  });

  it("treats a stream cut before message_stop as dropped", async () => {
    upstream.answers = [sseAnswer(frame({ type: "message_start" }))];
    const result = await adapter.messages!({ stream: true }, options());
    if (result.kind !== "stream") throw new Error("expected a stream");
    await expect(drain(result.batches)).rejects.toMatchObject({ failure: "protocol", retryable: true });
  });

  it("raises an overloaded error event as a retryable 529", async () => {
    upstream.answers = [sseAnswer(`event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n`)];
    const result = await adapter.messages!({ stream: true }, options());
    if (result.kind !== "stream") throw new Error("expected a stream");
    await expect(drain(result.batches)).rejects.toMatchObject({ status: 529, retryable: true });
  });

  it("passes 429/529 retry headers through as an UpstreamError, never the body", async () => {
    upstream.answers = [
      {
        status: 529,
        headers: { "content-type": "application/json", "retry-after": "2", "retry-after-ms": "1500" },
        body: '{"type":"error"}',
      },
    ];
    const err = await adapter.messages!({}, options()).catch((e: unknown) => e);
    expect(err).toMatchObject({
      name: "UpstreamError",
      status: 529,
      retryable: true,
      retryHeaders: { "retry-after": "2", "retry-after-ms": "1500" },
    });
    expect(String((err as Error).message)).not.toContain("error");
  });
});

describe("anthropicSseRules.toError", () => {
  it.each([
    ["invalid_request_error", 400],
    ["authentication_error", 401],
    ["permission_error", 403],
    ["not_found_error", 404],
    ["request_too_large", 413],
    ["rate_limit_error", 429],
    ["api_error", 500],
    ["timeout_error", 504],
    ["overloaded_error", 529],
    ["something_new", 502],
    ["toString", 502],
  ])("maps %s to %i", (type, status) => {
    expect(anthropicSseRules.toError!({ type: "error", error: { type } })).toMatchObject({ status });
  });
  it("ignores other events and tolerates a malformed error", () => {
    expect(anthropicSseRules.toError!({ type: "ping" })).toBeNull();
    expect(anthropicSseRules.toError!({ type: "error", error: "x" })).toMatchObject({ status: 502 });
  });
});
