import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { type MockUpstream, startMockUpstream } from "../../src/mock-upstream/server.js";
import { postJson } from "../helpers/mock-upstream-client.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { readSse } from "../helpers/sse-frames.js";

const API_KEY = "sk-mock-test";
let mock: MockUpstream;
let client: OpenAI;

beforeAll(async () => {
  mock = await startMockUpstream({ port: 0, apiKey: API_KEY });
  client = new OpenAI({ apiKey: API_KEY, baseURL: mock.baseUrl, maxRetries: 0 });
});
afterAll(async () => {
  await mock.close();
});

interface Item {
  b64_json?: string;
  url?: string;
  revised_prompt?: string;
}
interface ImagesBody {
  data: Item[];
  usage?: Record<string, unknown>;
  output_format?: string;
}

const auth = { authorization: `Bearer ${API_KEY}` };
const generate = (body: object, headers: Record<string, string> = {}) =>
  postJson(`${mock.baseUrl}/images/generations`, body, { ...auth, ...headers });
const edit = (body: object, headers: Record<string, string> = {}) =>
  postJson(`${mock.baseUrl}/images/edits`, body, { ...auth, ...headers });

/** A valid JSON answer, checked against OpenAI's `ImagesResponse`. */
async function images(res: Response): Promise<ImagesBody> {
  expect(res.status).toBe(200);
  const body = (await res.json()) as ImagesBody;
  expect(validateOpenAI("ImagesResponse", body)).toEqual([]);
  return body;
}

const bytesOf = (item: Item | undefined) => Buffer.from(item?.b64_json ?? "", "base64");
const PROMPT = "a red fox"; // 9 characters: 3 text tokens
const EDIT_IMAGES = [{ image_url: "https://example.com/source.png" }];

describe("mock upstream: image generations", () => {
  it("answers one PNG by default, as base64, with complete usage (the SDK reads it too)", async () => {
    const body = await images(await generate({ model: "gpt-image-1", prompt: PROMPT }));
    expect(body.data).toHaveLength(1);
    expect(bytesOf(body.data[0]).equals(MOCK_IMAGES.png)).toBe(true);
    expect(body).toMatchObject({ created: 1735689600, output_format: "png", size: "1024x1024", quality: "medium", background: "opaque" });
    // medium square: 1056 output tokens per image
    expect(body.usage).toEqual({
      input_tokens: 3,
      output_tokens: 1056,
      total_tokens: 1059,
      input_tokens_details: { text_tokens: 3, image_tokens: 0 },
    });

    const viaSdk = await client.images.generate({ model: "gpt-image-1", prompt: PROMPT });
    expect(viaSdk.data?.[0]?.b64_json).toBe(body.data[0]!.b64_json);
  });

  it.each(["jpeg", "webp"] as const)("answers output_format %s with that format's bytes", async (format) => {
    const body = await images(await generate({ prompt: PROMPT, output_format: format }));
    expect(body.output_format).toBe(format);
    expect(bytesOf(body.data[0]).equals(MOCK_IMAGES[format])).toBe(true);
  });

  it("answers n images, and counts each one's output by size and quality", async () => {
    const body = await images(await generate({ prompt: PROMPT, n: 3, size: "1024x1536", quality: "high" }));
    expect(body.data).toHaveLength(3);
    expect(body.usage).toMatchObject({ output_tokens: 3 * 6240, total_tokens: 3 + 3 * 6240 });
  });

  it("is deterministic", async () => {
    const request = { model: "gpt-image-1", prompt: PROMPT, n: 2 };
    expect(await (await generate(request)).text()).toBe(await (await generate(request)).text());
  });

  it("revises the prompt for a dall-e-3 model", async () => {
    const body = await images(await generate({ model: "dall-e-3", prompt: PROMPT }));
    expect(body.data[0]!.revised_prompt).toBe(`Mock revision: ${PROMPT}`);
  });

  it("x-mock-image: gif, bmp, svg answer those bytes whatever output_format says", async () => {
    for (const kind of ["gif", "bmp", "svg"] as const) {
      const body = await images(await generate({ prompt: PROMPT, output_format: "jpeg" }, { "x-mock-image": kind }));
      expect(body.output_format).toBe("jpeg");
      expect(bytesOf(body.data[0]).equals(MOCK_IMAGES[kind])).toBe(true);
    }
  });

  it("x-mock-image: not-image and invalid-base64 spoil the base64 (the latter only for a strict decoder)", async () => {
    const notImage = await images(await generate({ prompt: PROMPT }, { "x-mock-image": "not-image" }));
    expect(bytesOf(notImage.data[0]).toString()).toBe("This is not an image.");

    const invalid = await images(await generate({ prompt: PROMPT }, { "x-mock-image": "invalid-base64" }));
    const text = invalid.data[0]!.b64_json!;
    expect(text).not.toMatch(/^[A-Za-z0-9+/]*={0,2}$/);
    // Node's lenient decoder skips the stray characters and finds the image anyway.
    expect(Buffer.from(text, "base64").equals(MOCK_IMAGES.png)).toBe(true);
  });

  it("x-mock-image: data-uri answers the image as a data: URI in url", async () => {
    const body = await images(await generate({ prompt: PROMPT, output_format: "webp" }, { "x-mock-image": "data-uri" }));
    expect(body.data[0]).toEqual({ url: `data:image/webp;base64,${MOCK_IMAGES.webp.toString("base64")}` });
  });
});

describe("mock upstream: image links", () => {
  it("response_format url links to an image the mock serves without a key", async () => {
    const body = await images(await generate({ model: "dall-e-2", prompt: PROMPT, response_format: "url", n: 2 }));
    const urls = body.data.map((d) => d.url!);
    expect(urls).toHaveLength(2);
    expect(new Set(urls).size).toBe(2);
    for (const url of urls) {
      expect(url).toMatch(new RegExp(`^${mock.url}/mock-images/[0-9a-f]{24}-\\d\\.png$`));
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/png");
      expect(Buffer.from(await res.arrayBuffer()).equals(MOCK_IMAGES.png)).toBe(true);
    }
  });

  it("x-mock-image: url links to the requested format, whatever response_format says", async () => {
    const body = await images(await generate({ prompt: PROMPT, output_format: "jpeg" }, { "x-mock-image": "url" }));
    const res = await fetch(body.data[0]!.url!);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(Buffer.from(await res.arrayBuffer()).equals(MOCK_IMAGES.jpeg)).toBe(true);
  });

  it("x-mock-image: url-404 links to an image that is not there", async () => {
    const body = await images(await generate({ prompt: PROMPT }, { "x-mock-image": "url-404" }));
    expect(body.data[0]!.url).toMatch(/\/mock-images\/missing-/);
    expect((await fetch(body.data[0]!.url!)).status).toBe(404);
  });

  it("x-mock-image: url-redirect-private links to a redirect to the cloud metadata address", async () => {
    const body = await images(await generate({ prompt: PROMPT }, { "x-mock-image": "url-redirect-private" }));
    const res = await fetch(body.data[0]!.url!, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("http://169.254.169.254/latest/meta-data");
  });

  it("serves only known names", async () => {
    expect((await fetch(`${mock.url}/mock-images/abc.bmp`)).status).toBe(404);
    expect((await fetch(`${mock.url}/mock-images/abc`)).status).toBe(404);
  });
});

describe("mock upstream: image usage", () => {
  it("x-mock-image-usage: cached adds cached tokens to the input details", async () => {
    const body = await images(await edit({ prompt: PROMPT, images: EDIT_IMAGES }, { "x-mock-image-usage": "cached" }));
    // 3 text tokens + 85 for the input image; half of the 88 input tokens cached
    expect(body.usage).toEqual({
      input_tokens: 88,
      output_tokens: 1056,
      total_tokens: 1144,
      input_tokens_details: { text_tokens: 3, image_tokens: 85, cached_tokens: 44 },
    });
  });

  it("x-mock-image-usage: partial leaves the details out, which OpenAI's schema requires", async () => {
    const res = await generate({ prompt: PROMPT }, { "x-mock-image-usage": "partial" });
    const body = (await res.json()) as ImagesBody;
    expect(body.usage).toEqual({ input_tokens: 3, output_tokens: 1056, total_tokens: 1059 });
    expect(validateOpenAI("ImagesResponse", body).join()).toContain("input_tokens_details");
  });

  it("x-mock-omit-usage leaves usage out", async () => {
    const body = await images(await generate({ prompt: PROMPT }, { "x-mock-omit-usage": "1" }));
    expect(body).not.toHaveProperty("usage");
  });
});

describe("mock upstream: image edits", () => {
  it("answers a JSON edit, counting its input images", async () => {
    const body = await images(await edit({ model: "gpt-image-1", prompt: PROMPT, images: [...EDIT_IMAGES, { file_id: "file-1" }] }));
    expect(bytesOf(body.data[0]).equals(MOCK_IMAGES.png)).toBe(true);
    expect(body.usage).toMatchObject({ input_tokens: 3 + 170, input_tokens_details: { text_tokens: 3, image_tokens: 170 } });
  });

  it("answers a multipart edit from the SDK, one image or several", async () => {
    const upload = (name: string) => toFile(MOCK_IMAGES.png, name, { type: "image/png" });
    const one = await client.images.edit({
      model: "gpt-image-1",
      prompt: PROMPT,
      image: await upload("a.png"),
      n: 2,
      output_format: "webp",
    });
    expect(one.data).toHaveLength(2);
    expect(Buffer.from(one.data![0]!.b64_json!, "base64").equals(MOCK_IMAGES.webp)).toBe(true);
    expect(one.usage).toMatchObject({ input_tokens_details: { text_tokens: 3, image_tokens: 85 } });
    expect(validateOpenAI("ImagesResponse", one)).toEqual([]);

    const two = await client.images.edit({ prompt: PROMPT, image: [await upload("a.png"), await upload("b.png")] });
    expect(two.usage).toMatchObject({ input_tokens_details: { image_tokens: 170 } });
  });

  it("refuses an edit without an image, and a request without a prompt, naming the field", async () => {
    const noImage = await edit({ prompt: PROMPT });
    expect(noImage.status).toBe(400);
    expect(((await noImage.json()) as { error: { param: string } }).error.param).toBe("images");

    const form = new FormData();
    form.set("prompt", PROMPT);
    form.set("n", "two");
    const badForm = await fetch(`${mock.baseUrl}/images/edits`, { method: "POST", headers: auth, body: form });
    expect(badForm.status).toBe(400);

    const noPrompt = await generate({ model: "gpt-image-1" });
    expect(noPrompt.status).toBe(400);
    expect(((await noPrompt.json()) as { error: { param: string; code: string } }).error).toMatchObject({
      param: "prompt",
      code: "invalid_value",
    });
  });

  it("needs the key on the image routes", async () => {
    expect((await postJson(`${mock.baseUrl}/images/generations`, { prompt: PROMPT })).status).toBe(401);
  });
});

describe("mock upstream: image streams", () => {
  it("streams an edit: partial_images partial events, then the completed one with usage", async () => {
    const res = await edit({ prompt: PROMPT, images: EDIT_IMAGES, stream: true, partial_images: 2, n: 3, output_format: "jpeg" });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const { events, broken } = await readSse(res);
    expect(broken).toBe(false);
    const payloads = events.map((e) => JSON.parse(e.data) as Record<string, unknown>);
    for (const p of payloads) expect(validateOpenAI("ImageEditStreamEvent", p)).toEqual([]);
    expect(events.map((e) => e.event)).toEqual(["image_edit.partial_image", "image_edit.partial_image", "image_edit.completed"]);
    expect(payloads.map((p) => p.type)).toEqual(events.map((e) => e.event));
    expect(payloads.slice(0, 2).map((p) => p.partial_image_index)).toEqual([0, 1]);
    expect(payloads.slice(0, 2).every((p) => !("usage" in p))).toBe(true);
    const completed = payloads[2]!;
    expect(Buffer.from(completed.b64_json as string, "base64").equals(MOCK_IMAGES.jpeg)).toBe(true);
    // One image whatever n; each partial image adds 100 output tokens.
    expect(completed.usage).toEqual({
      input_tokens: 88,
      output_tokens: 1056 + 200,
      total_tokens: 88 + 1256,
      input_tokens_details: { text_tokens: 3, image_tokens: 85 },
    });
  });

  it("streams a generation with the image_generation events, readable by the SDK", async () => {
    const stream = await client.images.generate({ prompt: PROMPT, stream: true, partial_images: 1 });
    const events: Record<string, unknown>[] = [];
    for await (const event of stream) events.push(event as unknown as Record<string, unknown>);
    expect(events.map((e) => e.type)).toEqual(["image_generation.partial_image", "image_generation.completed"]);
    for (const e of events) expect(validateOpenAI("ImageGenStreamEvent", e)).toEqual([]);
  });

  it("applies the stream faults: a drop after the first partial image, no usage", async () => {
    const dropped = await readSse(
      await edit({ prompt: PROMPT, images: EDIT_IMAGES, stream: true, partial_images: 3 }, { "x-mock-drop-after": "1" }),
    );
    expect(dropped.events.map((e) => e.event)).toEqual(["image_edit.partial_image"]);
    expect(dropped.broken).toBe(true);

    const { events } = await readSse(await edit({ prompt: PROMPT, images: EDIT_IMAGES, stream: true }, { "x-mock-omit-usage": "1" }));
    const completed = JSON.parse(events.at(-1)!.data) as Record<string, unknown>;
    expect(completed.type).toBe("image_edit.completed");
    expect(completed).not.toHaveProperty("usage");
  });

  it("x-mock-image spoils the streamed images too", async () => {
    const { events } = await readSse(
      await edit({ prompt: PROMPT, images: EDIT_IMAGES, stream: true, partial_images: 1 }, { "x-mock-image": "not-image" }),
    );
    for (const e of events)
      expect(Buffer.from((JSON.parse(e.data) as { b64_json: string }).b64_json, "base64").toString()).toBe("This is not an image.");
  });
});
