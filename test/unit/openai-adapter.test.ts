import { beforeAll, describe, expect, it } from "vitest";
import { CanonicalBase64 } from "../../src/providers/upstream-images/canonical-base64.js";
import { createOpenAIAdapter } from "../../src/providers/openai/index.js";
import type { ProviderAdapter, Target } from "../../src/providers/types.js";
import { drain, jsonAnswer, sseAnswer, useRecordingAdapter, type RecordingUpstream } from "../helpers/recording-upstream.js";

let upstream: RecordingUpstream;
let adapter: ProviderAdapter;
let target: Target;
const fixture = useRecordingAdapter(createOpenAIAdapter, "openai", (url) => `${url}/v1`, { providerId: "main", upstreamModel: "gpt-x" });
beforeAll(() => void ({ upstream, adapter, target } = fixture));

const options = () => ({ target, signal: AbortSignal.timeout(5000) });

describe("OpenAI adapter: responses and embeddings", () => {
  it("posts responses to {base_url}/responses with the provider key, usage normalised", async () => {
    upstream.answers = [
      jsonAnswer({
        id: "resp_1",
        object: "response",
        usage: { input_tokens: 9, output_tokens: 3, input_tokens_details: { cached_tokens: 4 } },
      }),
    ];
    const result = await adapter.responses!({ model: "gpt-x", input: "hi" }, options());
    expect(result).toMatchObject({ kind: "json", status: 200, usage: { promptTokens: 9, completionTokens: 3, cachedTokens: 4 } });
    const [req] = upstream.requests;
    expect(req).toMatchObject({ method: "POST", path: "/v1/responses" });
    expect(req!.headers).toMatchObject({
      authorization: "Bearer provider-key",
      "content-type": "application/json",
      accept: "application/json",
    });
    expect(JSON.parse(req!.body)).toEqual({ model: "gpt-x", input: "hi" });
  });

  it("streams responses until response.completed, keeping event names, with a client's own key", async () => {
    const completed = { type: "response.completed", response: { usage: { input_tokens: 1, output_tokens: 2 } } };
    upstream.answers = [
      sseAnswer(
        `event: response.created\ndata: {"type":"response.created"}\n\nevent: response.completed\ndata: ${JSON.stringify(completed)}\n\n`,
      ),
    ];
    const result = await adapter.responses!({ model: "gpt-x", input: "hi", stream: true }, { ...options(), apiKey: "client-key" });
    expect(result.kind).toBe("stream");
    if (result.kind !== "stream") return;
    const events = await drain(result.batches);
    expect(events).toEqual([
      { data: { type: "response.created" }, raw: '{"type":"response.created"}', event: "response.created" },
      { data: completed, raw: JSON.stringify(completed), event: "response.completed" },
    ]);
    expect(upstream.requests[0]!.headers).toMatchObject({ authorization: "Bearer client-key", accept: "text/event-stream" });
    expect(JSON.parse(upstream.requests[0]!.body)).toEqual({ model: "gpt-x", input: "hi", stream: true });
  });

  it("turns an in-stream error event into an UpstreamError, never relaying its text", async () => {
    upstream.answers = [sseAnswer(`event: error\ndata: {"type":"error","code":"rate_limit_exceeded","message":"internal detail"}\n\n`)];
    const result = await adapter.responses!({ model: "gpt-x", input: "hi", stream: true }, options());
    if (result.kind !== "stream") throw new Error("expected a stream");
    await expect(drain(result.batches)).rejects.toMatchObject({ name: "UpstreamError", status: 429 });
  });

  it("posts embeddings to {base_url}/embeddings as JSON", async () => {
    upstream.answers = [jsonAnswer({ object: "list", data: [], model: "e", usage: { prompt_tokens: 5, total_tokens: 5 } })];
    const result = await adapter.embeddings!({ model: "e", input: ["a", "b"], encoding_format: "float" }, options());
    expect(result).toMatchObject({ kind: "json", usage: { promptTokens: 5, completionTokens: 0, cachedTokens: 0 } });
    expect(upstream.requests[0]).toMatchObject({ path: "/v1/embeddings" });
    expect(upstream.requests[0]!.headers).toMatchObject({ authorization: "Bearer provider-key", accept: "application/json" });
  });

  it("reports a non-2xx answer as an UpstreamError with only its status and retry headers", async () => {
    upstream.answers = [
      { status: 429, headers: { "content-type": "application/json", "retry-after": "3" }, body: '{"error":{"message":"secret"}}' },
    ];
    await expect(adapter.embeddings!({ model: "e", input: "a" }, options())).rejects.toMatchObject({
      status: 429,
      retryHeaders: { "retry-after": "3" },
    });
  });
});

describe("OpenAI adapter: images", () => {
  const usage = { input_tokens: 12, output_tokens: 272, total_tokens: 284, input_tokens_details: { text_tokens: 12, image_tokens: 0 } };

  it("posts generations to {base_url}/images/generations as JSON, its base64 kept as bytes and its usage read as tokens", async () => {
    const answer = { created: 1, data: [{ b64_json: "aGk=" }], usage };
    upstream.answers = [jsonAnswer(answer)];
    const result = await adapter.imageGenerations!({ model: "gpt-x", prompt: "a cat", n: 1 }, options());
    expect(result).toMatchObject({
      kind: "json",
      status: 200,
      body: { created: 1, data: [{ b64_json: expect.any(CanonicalBase64) }], usage },
      usage: { promptTokens: 12, completionTokens: 272, cachedTokens: 0 },
    });
    expect((result.body.data as { b64_json: CanonicalBase64 }[])[0]!.b64_json.text()).toBe("aGk=");
    expect(upstream.requests[0]).toMatchObject({ method: "POST", path: "/v1/images/generations" });
    expect(upstream.requests[0]!.headers).toMatchObject({ authorization: "Bearer provider-key", accept: "application/json" });
    expect(JSON.parse(upstream.requests[0]!.body)).toEqual({ model: "gpt-x", prompt: "a cat", n: 1 });
  });

  it("posts JSON edits to {base_url}/images/edits, and streams them with their event names", async () => {
    upstream.answers = [jsonAnswer({ created: 1, data: [{ b64_json: "aGk=" }] })];
    const edit = { model: "gpt-x", prompt: "a hat", images: [{ image_url: "data:image/png;base64,aGk=" }] };
    expect(await adapter.imageEdits!(edit, options())).toMatchObject({ kind: "json", usage: null });
    expect(upstream.requests[0]).toMatchObject({ path: "/v1/images/edits" });

    const completed = { type: "image_edit.completed", b64_json: "aGk=", usage };
    upstream.answers = [sseAnswer(`event: image_edit.completed\ndata: ${JSON.stringify(completed)}\n\n`)];
    const result = await adapter.imageEdits!(Object.assign({ stream: true }, edit), options());
    if (result.kind !== "stream") throw new Error("expected a stream");
    expect(await drain(result.batches)).toEqual([{ data: completed, raw: JSON.stringify(completed), event: "image_edit.completed" }]);
    expect(upstream.requests[1]!.headers).toMatchObject({ accept: "text/event-stream" });
  });

  it("raises an edit stream's error event by its code, and refuses a stream that ends before an image completed", async () => {
    const edit = { model: "gpt-x", prompt: "a hat", images: ["data:image/png;base64,aGk="], stream: true };
    upstream.answers = [sseAnswer(`event: error\ndata: {"type":"error","code":"rate_limit_exceeded","message":"secret"}\n\n`)];
    const limited = await adapter.imageEdits!(edit, options());
    if (limited.kind !== "stream") throw new Error("expected a stream");
    await expect(drain(limited.batches)).rejects.toMatchObject({ name: "UpstreamError", status: 429 });
    upstream.answers = [sseAnswer(`event: image_edit.partial_image\ndata: {"type":"image_edit.partial_image","b64_json":"aGk="}\n\n`)];
    const cut = await adapter.imageEdits!(edit, options());
    if (cut.kind !== "stream") throw new Error("expected a stream");
    await expect(drain(cut.batches)).rejects.toMatchObject({ name: "UpstreamError" });
  });
});

describe("OpenAI adapter: videos", () => {
  const job = (fields: object) => ({ id: "video_1", object: "video", model: "sora-2", progress: 0, created_at: 1, ...fields });

  it("posts a job to {base_url}/videos and reads its status at /videos/{id}", async () => {
    upstream.answers = [jsonAnswer(job({ status: "queued", seconds: "8" }))];
    const body = { model: "sora-2", prompt: "a cat", seconds: "8" };
    expect(await adapter.videoSubmit!(body, options())).toEqual({ id: "video_1", status: "queued", videos: [] });
    expect(upstream.requests[0]).toMatchObject({ method: "POST", path: "/v1/videos" });
    expect(upstream.requests[0]!.headers).toMatchObject({ authorization: "Bearer provider-key", "content-type": "application/json" });
    expect(JSON.parse(upstream.requests[0]!.body)).toEqual(body);

    upstream.answers = [jsonAnswer(job({ status: "completed", seconds: "8", error: null }))];
    expect(await adapter.videoStatus!("video_1", options())).toEqual({
      id: "video_1",
      status: "completed",
      videos: [{ content: "provider", durationSeconds: 8 }],
    });
    expect(upstream.requests[1]).toMatchObject({ method: "GET", path: "/v1/videos/video_1" });
  });

  it("keeps nothing of a failed job's error, counts an odd `seconds` as not reported, and refuses a job that is not one", async () => {
    upstream.answers = [jsonAnswer(job({ status: "failed", error: { code: "moderation", message: "secret" } }))];
    expect(await adapter.videoStatus!("video_1", options())).toEqual({ id: "video_1", status: "failed", videos: [] });
    upstream.answers = [jsonAnswer(job({ status: "completed", seconds: "eight" }))];
    expect((await adapter.videoStatus!("video_1", options())).videos).toEqual([{ content: "provider", durationSeconds: null }]);
    upstream.answers = [jsonAnswer(job({ status: "done" }))];
    await expect(adapter.videoStatus!("video_1", options())).rejects.toMatchObject({ name: "UpstreamError", failure: "protocol" });
  });

  it("streams a job's content with the key, refuses it over the cap, and reports a 404 by its status", async () => {
    const bytes = Buffer.alloc(5000, 7).toString("latin1");
    upstream.answers = [{ status: 200, headers: { "content-type": "video/mp4", "content-length": "5000" }, body: bytes }];
    const content = await adapter.videoContent!("video_1", options(), 10_000);
    expect(content.contentType).toBe("video/mp4");
    const parts: Buffer[] = [];
    for await (const chunk of content.chunks) parts.push(chunk);
    expect(Buffer.concat(parts).length).toBe(5000);
    expect(upstream.requests[0]).toMatchObject({ method: "GET", path: "/v1/videos/video_1/content" });
    expect(upstream.requests[0]!.headers).toMatchObject({ authorization: "Bearer provider-key", accept: "application/binary" });

    // Declared over the cap: refused before the body is read.
    await expect(adapter.videoContent!("video_1", options(), 100)).rejects.toMatchObject({ failure: "too_large" });
    // Undeclared (chunked): refused once the bytes pass the cap.
    upstream.answers = [{ status: 200, headers: { "content-type": "video/mp4", "transfer-encoding": "chunked" }, body: bytes }];
    const chunked = await adapter.videoContent!("video_1", options(), 100);
    await expect(
      (async () => {
        for await (const chunk of chunked.chunks) void chunk;
      })(),
    ).rejects.toMatchObject({ failure: "too_large" });

    upstream.answers = [jsonAnswer({ error: { message: "expired", type: "invalid_request_error", param: null, code: null } }, 404)];
    await expect(adapter.videoContent!("video_1", options(), 100)).rejects.toMatchObject({ name: "UpstreamError", status: 404 });
  });
});
