import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { countPromptTokens, countTextTokens, estimatePromptTokens } from "../../src/metering/estimate.js";
import { convertOpenAIUsage } from "../../src/providers/openai/convert-openai-usage.js";
import { readSse } from "../../src/providers/sse.js";
import { UpstreamError } from "../../src/providers/types.js";
import { batchesOf, bytes } from "../helpers/async-iter.js";

describe("readSse", () => {
  it("parses events split anywhere across chunks and stops at [DONE]", async () => {
    const events = await batchesOf(
      readSse(bytes('data: {"a"', ":1}\n\nda", 'ta: {"b":2}\n\n', "data: [DONE]\n\n", 'data: {"late":1}\n\n')),
    );
    expect(events).toEqual([[{ data: { a: 1 }, raw: '{"a":1}' }], [{ data: { b: 2 }, raw: '{"b":2}' }], [{ done: true }]]);
  });

  it("yields the events one network chunk completes as one batch, and nothing after [DONE]", async () => {
    const batches = await batchesOf(
      readSse(bytes('data: {"a":1}\n\ndata: {"b":2}\n\ndata: {"c"', ':3}\n\ndata: [DONE]\n\ndata: {"late":1}\n\n')),
    );
    expect(batches).toEqual([
      [
        { data: { a: 1 }, raw: '{"a":1}' },
        { data: { b: 2 }, raw: '{"b":2}' },
      ],
      [{ data: { c: 3 }, raw: '{"c":3}' }, { done: true }],
    ]);
  });

  it("ends a Node stream read to its end without destroying it, and cuts one still open after [DONE]", async () => {
    const ended = Readable.from([Buffer.from('data: {"a":1}\n\ndata: [DONE]\n\n')]);
    expect(await batchesOf(readSse(ended))).toHaveLength(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended.readableEnded).toBe(true);
    expect(ended.destroyed).toBe(true);
    expect(ended.errored).toBeNull();

    const open = new Readable({ read() {} });
    open.push('data: {"a":1}\n\ndata: [DONE]\n\n');
    expect(await batchesOf(readSse(open))).toHaveLength(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(open.destroyed).toBe(true);
  });

  it("hands over to a sink: the batch read first, then each later read as it arrives, then the end", async () => {
    const body = new Readable({ read() {} });
    const events = readSse(body);
    body.push('data: {"a":1}\n\n');
    body.push('data: {"b":2}\n\n');
    expect(await events.next()).toEqual([{ data: { a: 1 }, raw: '{"a":1}' }]);
    const seen: unknown[] = [];
    events.pipe({ batch: (batch) => seen.push(batch), end: (error) => seen.push({ end: error }) });
    // The read after the pulled one was held back, and arrives first.
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual([[{ data: { b: 2 }, raw: '{"b":2}' }]]);
    body.push('data: {"c":3}\n\ndata: [DONE]\n\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual([[{ data: { b: 2 }, raw: '{"b":2}' }], [{ data: { c: 3 }, raw: '{"c":3}' }, { done: true }], { end: null }]);
  });

  it("reads nothing while paused, and an end read with the first batch waits for the sink", async () => {
    const body = new Readable({ read() {} });
    const events = readSse(body);
    body.push('data: {"a":1}\n\n');
    const seen: unknown[] = [];
    events.pipe({ batch: (batch) => seen.push(batch), end: (error) => seen.push({ end: error }) });
    await new Promise((resolve) => setImmediate(resolve));
    events.pause();
    body.push('data: {"b":2}\n\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual([[{ data: { a: 1 }, raw: '{"a":1}' }]]);
    events.resume();
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toHaveLength(2);

    const whole = readSse(bytes('data: {"a":1}\n\ndata: [DONE]\n\n'));
    expect(await whole.next()).toHaveLength(2);
    const ends: unknown[] = [];
    whole.pipe({ batch: (batch) => ends.push(batch), end: (error) => ends.push({ end: error }) });
    expect(ends).toEqual([{ end: null }]);
  });

  it("treats a stream that ends without [DONE] as dropped", async () => {
    await expect(batchesOf(readSse(bytes('data: {"a":1}\n\n')))).rejects.toBeInstanceOf(UpstreamError);
  });

  it("rejects events that are not JSON objects", async () => {
    await expect(batchesOf(readSse(bytes("data: not json\n\n")))).rejects.toMatchObject({ failure: "protocol" });
    await expect(batchesOf(readSse(bytes("data: [1,2]\n\n")))).rejects.toMatchObject({ failure: "protocol" });
  });
});

describe("token estimates", () => {
  const messages = [
    { role: "system", content: "You are terse." },
    {
      role: "user",
      content: [
        { type: "text", text: "Describe this picture in detail please." },
        { type: "image_url", image_url: { url: "data:," } },
      ],
    },
  ];

  it("the cheap estimate is at least the tokenizer's count for ordinary text", async () => {
    expect(estimatePromptTokens(messages)).toBeGreaterThanOrEqual(await countPromptTokens(messages));
    const english = [{ role: "user", content: "The quick brown fox jumps over the lazy dog. ".repeat(200) }];
    expect(estimatePromptTokens(english)).toBeGreaterThanOrEqual(await countPromptTokens(english));
  });

  it("counts images with a flat allowance and messages with their overhead", async () => {
    const oneImage = await countPromptTokens([{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }]);
    expect(oneImage).toBe(765 + 4);
    expect(await countTextTokens("")).toBe(0);
    expect(await countTextTokens("hello world")).toBe(2);
  });
});

describe("convertOpenAIUsage", () => {
  it("reads prompt, completion and cached tokens", () => {
    expect(convertOpenAIUsage({ prompt_tokens: 10, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 4 } })).toEqual({
      promptTokens: 10,
      completionTokens: 5,
      cachedTokens: 4,
    });
  });
  it.each([
    null,
    undefined,
    {},
    { prompt_tokens: -1, completion_tokens: 1 },
    { prompt_tokens: 1.5, completion_tokens: 1 },
    { prompt_tokens: "3", completion_tokens: 1 },
  ])("returns null for unusable usage %j", (usage) => {
    expect(convertOpenAIUsage(usage)).toBeNull();
  });
  it("caps cached tokens at the prompt", () => {
    expect(convertOpenAIUsage({ prompt_tokens: 3, completion_tokens: 0, prompt_tokens_details: { cached_tokens: 9 } })?.cachedTokens).toBe(
      3,
    );
  });
});
