import { describe, expect, it } from "vitest";
import { imageEditRelay, type EditStreamUsage } from "../../src/media/image-edit-relay.js";
import { validate } from "../../src/server/body.js";
import { imageEditJsonSchema } from "../../src/media/image-request-schema.js";
import { toUpstreamEdit } from "../../src/media/image-upstream-body.js";
import type { StreamEvent, UsageReport } from "../../src/providers/types.js";

// The image edit stream's protocol on its own: bytes kept, foreign fields dropped, usages added up, and what the
// relay bills when the completed events report usage or do not.

const event = (data: Record<string, unknown>, raw = JSON.stringify(data)): StreamEvent => ({ data, raw, event: String(data.type) });

const tokens = (usage: unknown): UsageReport | null => {
  const u = usage as { input_tokens?: number; output_tokens?: number } | undefined;
  return u?.input_tokens === undefined ? null : { promptTokens: u.input_tokens, completionTokens: u.output_tokens ?? 0, cachedTokens: 0 };
};

function relay() {
  const checked: string[] = [];
  const billed: EditStreamUsage[] = [];
  const protocol = imageEditRelay(
    async (b64) => void checked.push(b64),
    tokens,
    (done) => {
      billed.push(done);
      return { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
    },
  );
  return { protocol, checked, billed };
}

const ctx = { localUsage: async () => ({ promptTokens: 0, completionTokens: 0, cachedTokens: 0 }), delivered: true };

const usage = (input: number, output: number) => ({
  input_tokens: input,
  output_tokens: output,
  total_tokens: input + output,
  input_tokens_details: { text_tokens: input, image_tokens: 0 },
});

describe("imageEditRelay", () => {
  it("writes an event's bytes as the upstream sent them, after checking its image", async () => {
    const { protocol, checked } = relay();
    // Spacing a serialiser would not keep: only the upstream's own bytes have it.
    const raw = '{"type": "image_edit.partial_image", "b64_json": "QUJD", "partial_image_index": 0}';
    const text = await protocol.transform(event(JSON.parse(raw) as Record<string, unknown>, raw), ctx);
    expect(text).toBe(`event: image_edit.partial_image\ndata: ${raw}\n\n`);
    expect(checked).toEqual(["QUJD"]);
  });

  it("writes an event with fields OpenAI's events do not have again, with its own fields only", async () => {
    const { protocol } = relay();
    const data = {
      type: "image_edit.completed",
      b64_json: "QUJD",
      provider: "secret-upstream",
      routing: { region: "x" },
      size: "1024x1024",
    };
    const text = await protocol.transform(event(data), ctx);
    expect(text).toBe(
      `event: image_edit.completed\ndata: ${JSON.stringify({ type: "image_edit.completed", b64_json: "QUJD", size: "1024x1024" })}\n\n`,
    );
    expect(text).not.toContain("secret-upstream");
  });

  it("a refused image rejects the transform, so the relay ends the stream", async () => {
    const protocol = imageEditRelay(
      () => Promise.reject(new Error("not an image")),
      tokens,
      () => ({ promptTokens: 0, completionTokens: 0, cachedTokens: 0 }),
    );
    await expect(protocol.transform(event({ type: "image_edit.partial_image", b64_json: "QUJD" }), ctx)).rejects.toThrow("not an image");
  });

  it("adds up the usage of several completed images; bills from it only when every one had usage", async () => {
    const { protocol, billed } = relay();
    await protocol.transform(event({ type: "image_edit.completed", b64_json: "QQ==", usage: usage(10, 100) }), ctx);
    await protocol.transform(event({ type: "image_edit.completed", b64_json: "QQ==", usage: usage(5, 50) }), ctx);
    expect(protocol.usage()).not.toBeNull();
    expect(billed.at(-1)).toEqual({
      images: 2,
      usage: usage(15, 150),
      tokens: { promptTokens: 15, completionTokens: 150, cachedTokens: 0 },
    });

    const partial = relay();
    await partial.protocol.transform(event({ type: "image_edit.completed", b64_json: "QQ==", usage: usage(10, 100) }), ctx);
    await partial.protocol.transform(event({ type: "image_edit.completed", b64_json: "QQ==" }), ctx);
    // One image without usage: nothing upstream-reported to bill from; the local count is the fallback's.
    expect(partial.protocol.usage()).toBeNull();
    await partial.protocol.countLocal();
    expect(partial.billed.at(-1)).toEqual({ images: 2, usage: undefined, tokens: null });
  });

  it("a usage field only one image reports is left out of the sum (then the quota falls back)", async () => {
    const { protocol, billed } = relay();
    const first = Object.assign(usage(10, 100), { output_tokens_details: { image_tokens: 100, text_tokens: 0 } });
    await protocol.transform(event({ type: "image_edit.completed", b64_json: "QQ==", usage: first }), ctx);
    await protocol.transform(event({ type: "image_edit.completed", b64_json: "QQ==", usage: usage(5, 50) }), ctx);
    protocol.usage();
    expect(billed.at(-1)!.usage).toEqual(usage(15, 150));
  });

  it("passes [DONE] on and nothing is billed before an image completed", async () => {
    const { protocol } = relay();
    expect(await protocol.transform({ done: true }, ctx)).toBe("data: [DONE]\n\n");
    expect(protocol.usage()).toBeNull();
  });
});

describe("toUpstreamEdit", () => {
  it("sends every image and the mask as {image_url}, without the gateway's own fields", () => {
    const body = validate(imageEditJsonSchema, {
      model: "m",
      prompt: "p",
      images: [
        "data:image/png;base64,QQ==",
        { image_url: "https://example.test/a.png" },
        { image_url: { url: "https://example.test/b.png" } },
      ],
      mask: { image_url: { url: "data:image/png;base64,Qg==" } },
      response_format: "url",
      user: "u-1",
      output_compression: 0,
      quality: "high",
    });
    expect(toUpstreamEdit(body)).toEqual({
      model: "m",
      prompt: "p",
      images: [
        { image_url: "data:image/png;base64,QQ==" },
        { image_url: "https://example.test/a.png" },
        { image_url: "https://example.test/b.png" },
      ],
      mask: { image_url: "data:image/png;base64,Qg==" },
      output_compression: 0,
      quality: "high",
    });
  });
});
