import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { providerSchema } from "../../src/config/catalog-schema.js";
import { errorClassOf, upstreamToClient } from "../../src/metering/metered-errors.js";
import { createAnthropicAdapter } from "../../src/providers/anthropic/index.js";
import { createGeminiAdapter } from "../../src/providers/gemini/index.js";
import { createOpenAIAdapter } from "../../src/providers/openai/index.js";
import { createSystemOneAdapter } from "../../src/providers/systemone/index.js";
import { UpstreamAnswerTooLargeError, type ProviderAdapter, type Target } from "../../src/providers/types.js";
import {
  answerLimits,
  drain,
  jsonAnswer,
  sseAnswer,
  startRecordingUpstream,
  type RecordingUpstream,
} from "../helpers/recording-upstream.js";

// The cap on a 2xx JSON answer (limits.upstream_answer_bytes): an answer of exactly the cap is read, one byte
// more is refused (by Content-Length before reading, else as soon as the bytes read pass it) and the rest of
// the body is never read; each capability reads under its own cap; streams have none.

const CAP = 4096;

/** A JSON object whose text is exactly `bytes` long. */
function jsonOfLength(bytes: number): string {
  const text = JSON.stringify({ id: "chatcmpl-1", object: "chat.completion", pad: "" });
  return text.replace('"pad":""', `"pad":"${"a".repeat(bytes - text.length)}"`);
}

interface Upstream {
  /** How the next answer is sent. */
  mode: "content-length" | "chunked" | "endless" | "headers-only";
  body: string;
  /** Bytes of body written so far and whether the answer's connection closed before the answer ended. */
  written: number;
  cut: boolean;
  url: string;
}

let server: http.Server;
const upstream: Upstream = { mode: "chunked", body: "", written: 0, cut: false, url: "" };
let adapter: ProviderAdapter;
let target: Target;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    res.on("close", () => {
      if (!res.writableFinished) upstream.cut = true;
    });
    const write = (chunk: string) => {
      upstream.written += Buffer.byteLength(chunk);
      return res.write(chunk);
    };
    if (upstream.mode === "content-length") {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(upstream.body) });
      upstream.written += Buffer.byteLength(upstream.body);
      res.end(upstream.body);
    } else if (upstream.mode === "chunked") {
      // Several writes without a length: the answer arrives in chunks, and only counting can stop it.
      res.writeHead(200, { "content-type": "application/json" });
      const third = Math.ceil(upstream.body.length / 3);
      for (let i = 0; i < upstream.body.length; i += third) write(upstream.body.slice(i, i + third));
      res.end();
    } else if (upstream.mode === "endless") {
      // A JSON string that never ends, written as fast as the gateway reads, until the gateway hangs up.
      res.writeHead(200, { "content-type": "application/json" });
      write('{"id":"x","pad":"');
      const chunk = "a".repeat(16 * 1024);
      const more = () => {
        while (!res.destroyed && write(chunk));
        if (!res.destroyed) res.once("drain", more);
      };
      more();
    } else {
      // A declared length over the cap, and a body that never comes: reading it would wait for the idle timeout.
      res.writeHead(200, { "content-type": "application/json", "content-length": String(CAP + 1) });
      res.flushHeaders();
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = providerSchema.parse({ protocol: "openai", base_url: `${upstream.url}/v1`, api_key: "k" });
  adapter = createOpenAIAdapter(provider, answerLimits({ chat_completions: CAP }));
  target = { providerId: "main", provider, upstreamModel: "gpt-x" };
});

afterAll(async () => {
  await adapter?.close();
  server?.closeAllConnections();
  server?.close();
});

beforeEach(() => {
  upstream.written = 0;
  upstream.cut = false;
});

const chat = () => adapter.chatCompletions!({ model: "gpt-x", messages: [] }, { target, signal: AbortSignal.timeout(10_000) });

/** The call's rejection, which must be the cap's. */
async function refusal(call: Promise<unknown>): Promise<UpstreamAnswerTooLargeError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamAnswerTooLargeError);
  return err as UpstreamAnswerTooLargeError;
}

describe("the cap on a JSON answer", () => {
  it.each(["content-length", "chunked"] as const)("reads an answer of exactly the cap (%s)", async (mode) => {
    upstream.mode = mode;
    upstream.body = jsonOfLength(CAP);
    const result = await chat();
    expect(result).toMatchObject({ kind: "json", status: 200, body: { id: "chatcmpl-1" } });
    expect(result.kind === "json" && result.raw).toBe(upstream.body);
  });

  it("refuses an answer one byte over the cap as it is read, final and without upstream text", async () => {
    upstream.mode = "chunked";
    upstream.body = jsonOfLength(CAP + 1);
    const err = await refusal(chat());
    expect(err).toMatchObject({ name: "UpstreamError", failure: "too_large", status: 200, limitBytes: CAP, retryable: false });
    expect(err.message).toBe(`upstream answer over ${CAP} bytes`);
    // The adapter keeps working on its pool afterwards.
    upstream.body = jsonOfLength(CAP);
    expect((await chat()).kind).toBe("json");
  });

  it("stops reading an endless answer once the bytes read pass the cap, closing the connection", async () => {
    upstream.mode = "endless";
    await refusal(chat());
    await expect.poll(() => upstream.cut).toBe(true);
    const written = upstream.written;
    // What socket buffers took before the gateway hung up, then nothing more.
    expect(written).toBeLessThan(64 * 1024 * 1024);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(upstream.written).toBe(written);
  });

  it("refuses a Content-Length over the cap before reading the body", async () => {
    upstream.mode = "headers-only";
    const started = performance.now();
    const err = await refusal(chat());
    expect(err).toMatchObject({ failure: "too_large", limitBytes: CAP });
    // Reading would have waited for a body that never comes (idle timeout: 60 s).
    expect(performance.now() - started).toBeLessThan(5_000);
    await expect.poll(() => upstream.cut).toBe(true);
  });

  it("is told to the client as 502 upstream_answer_too_large naming the cap, an upstream error in the log", () => {
    const err = new UpstreamAnswerTooLargeError(CAP, 200);
    const client = upstreamToClient(err);
    expect(client).toMatchObject({ status: 502, type: "api_error", code: "upstream_answer_too_large", param: null });
    expect(client.message).toContain(`${CAP} bytes`);
    expect(upstreamToClient(err, true).code).toBe("upstream_answer_too_large");
    expect(errorClassOf(err)).toBe("upstream_error");
  });
});

describe("each capability reads under its own cap", () => {
  const limits = answerLimits({
    chat_completions: 101,
    responses: 102,
    embeddings: 103,
    messages: 104,
    generate_content: 105,
    evaluate: 106,
    images: 107,
  });
  let recording: RecordingUpstream;
  const adapters: Record<string, { adapter: ProviderAdapter; target: Target }> = {};

  beforeAll(async () => {
    recording = await startRecordingUpstream();
    recording.answers = [jsonAnswer({ pad: "a".repeat(200) })];
    const factories = {
      openai: createOpenAIAdapter,
      anthropic: createAnthropicAdapter,
      gemini: createGeminiAdapter,
      systemone: createSystemOneAdapter,
    };
    for (const [protocol, create] of Object.entries(factories)) {
      const provider = recording.provider({ protocol, base_url: protocol === "openai" ? `${recording.url}/v1` : recording.url });
      adapters[protocol] = { adapter: create(provider, limits), target: { providerId: protocol, provider, upstreamModel: "m" } };
    }
  });
  afterAll(async () => {
    for (const { adapter } of Object.values(adapters)) await adapter.close();
    await recording?.close();
  });

  const options = (protocol: string) => ({ target: adapters[protocol]!.target, signal: AbortSignal.timeout(5000) });
  const calls: [string, number, () => Promise<unknown>][] = [
    ["chatCompletions", 101, () => adapters.openai!.adapter.chatCompletions!({ model: "m", messages: [] }, options("openai"))],
    ["responses", 102, () => adapters.openai!.adapter.responses!({ model: "m", input: "hi" }, options("openai"))],
    ["embeddings", 103, () => adapters.openai!.adapter.embeddings!({ model: "m", input: "hi" }, options("openai"))],
    ["messages", 104, () => adapters.anthropic!.adapter.messages!({ model: "m", max_tokens: 5, messages: [] }, options("anthropic"))],
    ["generateContent", 105, () => adapters.gemini!.adapter.generateContent!({ contents: [] }, options("gemini"))],
    ["evaluate", 106, () => adapters.systemone!.adapter.evaluate!('{"model":"m"}', options("systemone"))],
    ["imageGenerations", 107, () => adapters.openai!.adapter.imageGenerations!({ model: "m", prompt: "a cat" }, options("openai"))],
    ["imageEdits", 107, () => adapters.openai!.adapter.imageEdits!({ model: "m", prompt: "a cat", images: [] }, options("openai"))],
  ];

  it.each(calls)("%s refuses past its cap of %i bytes", async (_name, cap, call) => {
    expect(await refusal(call())).toMatchObject({ limitBytes: cap });
  });

  it("leaves streams uncapped: they are relayed as they arrive, never held whole", async () => {
    const delta = (i: number) => `data: {"choices":[{"index":0,"delta":{"content":"${"x".repeat(50)}${i}"}}]}\n\n`;
    recording.answers = [sseAnswer(`${Array.from({ length: 10 }, (_, i) => delta(i)).join("")}data: [DONE]\n\n`)];
    const result = await adapters.openai!.adapter.chatCompletions!({ model: "m", messages: [], stream: true }, options("openai"));
    if (result.kind !== "stream") throw new Error("expected a stream");
    expect(await drain(result.batches)).toHaveLength(11);
    recording.answers = [jsonAnswer({ pad: "a".repeat(200) })];
  });
});
