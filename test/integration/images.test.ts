import { Writable } from "node:stream";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  fallbackImageQuota,
  imageQuotaEstimate,
  nativeImageQuota,
  classifyImageUsage,
  type ImageRates,
} from "../../src/billing/image-quota.js";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { createLogger } from "../../src/logger.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { sdkUser } from "../helpers/sdk-user.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { countLogWrites, settled as settledOnce } from "../helpers/metering-checks.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { parseFrames } from "../helpers/sse-frames.js";

// POST /v1/images/generations and /v1/images/edits over real HTTP, a real database and the mock upstream (faults
// through a proxy, one provider per fault): delivery typed by the bytes, never an upstream URL, and every quota
// path (native usage, the per-image fallback with its mark, a failed delivery released) checked in the ledger and
// the request log.

const RATES: ImageRates = { tokenMultiplier: 2.5, groupMultiplier: 1 };

const FAULTS: Record<string, Record<string, string>> = {
  plain: {},
  url: { "x-mock-image": "url" },
  datauri: { "x-mock-image": "data-uri" },
  gif: { "x-mock-image": "gif" },
  bmp: { "x-mock-image": "bmp" },
  notimage: { "x-mock-image": "not-image" },
  badb64: { "x-mock-image": "invalid-base64" },
  missing: { "x-mock-image": "url-404" },
  ssrf: { "x-mock-image": "url-redirect-private" },
  nousage: { "x-mock-omit-usage": "1" },
  partial: { "x-mock-image-usage": "partial" },
  cached: { "x-mock-image-usage": "cached" },
};

let mock: MockUpstream;
let proxy: FaultProxy;
let gw: TestGateway;
const logLines: string[] = [];

beforeAll(async () => {
  mock = await startMockUpstream();
  proxy = await startFaultProxy(mock.url);
  const providers = Object.fromEntries(
    Object.entries(FAULTS).map(([id, faults]) => [id, { protocol: "openai" as const, base_url: proxy.baseUrl(faults) }]),
  );
  const imageModel = (provider: string, upstream = "gpt-image-1") => ({
    kind: "image" as const,
    upstream,
    targets: [provider, "plain"],
    token_multiplier: RATES.tokenMultiplier,
  });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  gw = await startTestGateway({
    logger: createLogger("info", sink),
    config: {
      providers,
      models: {
        ...Object.fromEntries(Object.keys(FAULTS).map((id) => [id, imageModel(id)])),
        // Not a designated model: billed by the per-image rule, unmarked.
        other: imageModel("plain", "flux-mock"),
        snapshot: imageModel("plain", "gpt-image-1-2025-04-23"),
      },
      media: { download: { allow_private: ["127.0.0.1"] } },
      plans: { basic: { daily_tokens: 1_000_000, context_limit: 100_000 }, tiny: { daily_tokens: 4_000, context_limit: 100_000 } },
      default_plan: "basic",
    },
  });
  countLogWrites(gw);
});

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await mock?.close();
});

const freshUser = (plan = "basic") => sdkUser(gw, "images", plan);

const settled = (userId: string, requests = 1) => settledOnce([gw], userId, requests);

function post(key: string, path: string, body: unknown) {
  return fetch(`${gw.url}/v1${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** What the mock answers for the same request, asked directly: the usage the gateway bills. */
async function direct(body: Record<string, unknown>, faults: Record<string, string> = {}) {
  const res = await fetch(`${mock.baseUrl}/images/generations`, {
    method: "POST",
    headers: Object.assign({ "content-type": "application/json" }, faults),
    body: JSON.stringify(Object.assign({ model: "gpt-image-1" }, body)),
  });
  return (await res.json()) as { usage?: unknown; data: { b64_json?: string }[] };
}

const dataUri = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString("base64")}`;
const loggedFallbacks = () =>
  logLines.filter((l) => l.includes("IMAGE_USAGE_FALLBACK")).map((l) => JSON.parse(l) as Record<string, unknown>);

describe("image generation: delivery", () => {
  it("answers a data: URI typed by the bytes by default (SDK), a valid ImagesResponse, billed by native usage", async () => {
    const user = await freshUser();
    const prompt = "a lighthouse at dusk";
    const images = await user.client.images.generate({ model: "plain", prompt, output_format: "webp", n: 2 });
    expect(validateOpenAI("ImagesResponse", images)).toEqual([]);
    expect(images.data).toHaveLength(2);
    for (const item of images.data!) {
      expect(item.url).toBe(dataUri("image/webp", MOCK_IMAGES.webp));
      expect(item.b64_json).toBeUndefined();
    }
    const upstream = await direct({ prompt, output_format: "webp", n: 2 });
    expect(images.usage).toEqual(upstream.usage);
    const classified = classifyImageUsage(upstream.usage);
    if (classified.kind !== "native") throw new Error("the mock's usage should be complete");
    const charge = nativeImageQuota(classified.usage, RATES);
    const s = await settled(user.id);
    expect(s.hold).toMatchObject({
      status: "posted",
      amount: String(imageQuotaEstimate({ images: 2, size: undefined, kind: "generation" }, RATES)),
    });
    expect(s.log).toMatchObject({ status: 200, quota_charged: String(charge), usage_source: "upstream", gpt_image_usage_fallback: null });
    expect(s.log.route).toBe("/v1/images/generations");
  });

  it("answers plain base64 for b64_json, and the type follows the bytes, not output_format", async () => {
    const user = await freshUser();
    const b64 = await user.client.images.generate({ model: "plain", prompt: "a cat", response_format: "b64_json", output_format: "jpeg" });
    expect(b64.data![0]!.b64_json).toBe(MOCK_IMAGES.jpeg.toString("base64"));
    expect(b64.data![0]!.url).toBeUndefined();
    const gif = await user.client.images.generate({ model: "gif", prompt: "a cat", output_format: "png" });
    expect(gif.data![0]!.url).toBe(dataUri("image/gif", MOCK_IMAGES.gif));
    await settled(user.id, 2);
  });

  it.each([
    ["url", "a link the upstream answered is downloaded"],
    ["datauri", "a data: URI from the upstream is re-typed by its bytes"],
  ])("%s: %s; no upstream address reaches the client", async (model) => {
    const user = await freshUser();
    const res = await post(user.key, "/images/generations", { model, prompt: "a dog", output_format: "png" });
    const text = await res.text();
    expect(res.status).toBe(200);
    const body = JSON.parse(text) as { data: { url: string }[] };
    expect(body.data[0]!.url).toBe(dataUri("image/png", MOCK_IMAGES.png));
    expect(text).not.toMatch(/https?:\/\//);
    expect(text).not.toContain("127.0.0.1");
    await settled(user.id);
  });

  it.each([
    ["badb64", "base64 that is not canonical"],
    ["notimage", "bytes that are not an image"],
    ["bmp", "an image type the gateway does not deliver"],
    ["missing", "a link that 404s"],
    ["ssrf", "a link redirecting to the metadata address"],
  ])("%s (%s) answers 502 upstream_invalid_output, releases the hold, tries no other target", async (model) => {
    const user = await freshUser();
    const before = proxy.requests.length;
    const res = await post(user.key, "/images/generations", { model, prompt: "a bird", response_format: "b64_json" });
    const text = await res.text();
    expect(res.status).toBe(502);
    const body = JSON.parse(text) as { error: { code: string; type: string } };
    expect(body.error.code).toBe("upstream_invalid_output");
    expect(text).not.toContain("169.254");
    // The model's second target (plain) would generate, and bill, again: it is never asked.
    expect(proxy.requests.slice(before).filter((r) => r.path.endsWith("/images/generations"))).toHaveLength(1);
    const s = await settled(user.id);
    expect(s.hold.status).toBe("voided");
    expect(s.log).toMatchObject({ status: 502, quota_charged: "0", error_code: "upstream_invalid_output" });
  });
});

describe("image generation: quota", () => {
  it.each([
    ["nousage", "absent"],
    ["partial", "missing_modality"],
  ] as const)(
    "%s: a designated model's incomplete usage falls back to the per-image floor, marked %s and logged once",
    async (model, reason) => {
      const user = await freshUser();
      const res = await post(user.key, "/images/generations", { model, prompt: "a tree", n: 3 });
      expect(res.status).toBe(200);
      const upstream = await direct({ prompt: "a tree", n: 3 }, FAULTS[model]);
      const total = (upstream.usage as { total_tokens?: number } | undefined)?.total_tokens;
      const charge = fallbackImageQuota({ images: 3, size: undefined, kind: "generation", providerTotalTokens: total }, RATES);
      const s = await settled(user.id);
      expect(s.log).toMatchObject({ quota_charged: String(charge), gpt_image_usage_fallback: reason });
      expect(charge).toBeGreaterThanOrEqual(3n * 5_000n);
      const lines = loggedFallbacks().filter((l) => l.req_id === res.headers.get("x-request-id"));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ reason, model, upstream_model: "gpt-image-1" });
      expect(JSON.stringify(lines[0])).not.toContain("a tree");
    },
  );

  it("cached input tokens are priced at their own weight, once; a dated snapshot is designated too", async () => {
    const user = await freshUser();
    const res = await post(user.key, "/images/generations", { model: "cached", prompt: "a long prompt about a harbour at noon" });
    expect(res.status).toBe(200);
    const upstream = await direct({ prompt: "a long prompt about a harbour at noon" }, FAULTS.cached);
    const classified = classifyImageUsage(upstream.usage);
    expect(classified.kind).toBe("native");
    if (classified.kind !== "native") return;
    expect(classified.usage.cachedTextInput).toBeGreaterThan(0);
    const s = await settled(user.id);
    expect(s.log.quota_charged).toBe(String(nativeImageQuota(classified.usage, RATES)));

    const snap = await post(user.key, "/images/generations", { model: "snapshot", prompt: "a boat" });
    expect(snap.status).toBe(200);
    const after = await settled(user.id, 2);
    expect(after.logs.find((l) => l.request_id === snap.headers.get("x-request-id"))).toMatchObject({
      usage_source: "upstream",
      gpt_image_usage_fallback: null,
    });
  });

  it("other models pay the per-image rule unmarked; 4K raises the floor", async () => {
    const user = await freshUser();
    const res = await post(user.key, "/images/generations", { model: "other", prompt: "a hill", image_config: { aspect_ratio: "16:9" } });
    expect(res.status).toBe(200);
    const s = await settled(user.id);
    const upstream = await direct({ model: "flux-mock", prompt: "a hill", size: "1536x1024" });
    const total = (upstream.usage as { total_tokens: number }).total_tokens;
    expect(s.log).toMatchObject({
      quota_charged: String(fallbackImageQuota({ images: 1, size: undefined, kind: "generation", providerTotalTokens: total }, RATES)),
      gpt_image_usage_fallback: null,
    });
    expect(loggedFallbacks().filter((l) => l.req_id === res.headers.get("x-request-id"))).toEqual([]);
  });

  it("native usage above the hold is charged in full (the extra), below it the rest is refunded", async () => {
    const user = await freshUser();
    const big = await post(user.key, "/images/generations", { model: "plain", prompt: "a storm", quality: "high", size: "1024x1536" });
    expect(big.status).toBe(200);
    const upstream = await direct({ prompt: "a storm", quality: "high", size: "1024x1536" });
    const classified = classifyImageUsage(upstream.usage);
    if (classified.kind !== "native") throw new Error("the mock's usage should be complete");
    const charge = nativeImageQuota(classified.usage, RATES);
    const hold = imageQuotaEstimate({ images: 1, size: "1024x1536", kind: "generation" }, RATES);
    expect(charge).toBeGreaterThan(hold);
    const s = await settled(user.id);
    expect(s.hold).toMatchObject({ status: "posted", amount: String(hold), charged: String(charge) });
    expect(s.account.debits_posted).toBe(String(charge));
  });

  it("a hold the allowance cannot cover is the usual 429, nothing called upstream", async () => {
    const user = await freshUser("tiny");
    const before = proxy.requests.length;
    const res = await post(user.key, "/images/generations", { model: "plain", prompt: "a sun" });
    expect(res.status).toBe(429);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("insufficient_quota");
    expect(proxy.requests.length).toBe(before);
  });
});

describe("image generation: validation", () => {
  it.each([
    [{ n: 0 }, "n"],
    [{ n: 1.5 }, "n"],
    [{ n: 11 }, "n"],
    [{ output_compression: 101 }, "output_compression"],
    [{ output_compression: -1 }, "output_compression"],
    [{ output_compression: "50" }, "output_compression"],
    [{ background: "green" }, "background"],
    [{ output_format: "gif" }, "output_format"],
    [{ moderation: "high" }, "moderation"],
    [{ response_format: "link" }, "response_format"],
    [{ prompt: "" }, "prompt"],
    [{ prompt: null }, "prompt"],
    [{ image_config: { aspect_ratio: "wide" } }, "image_config.aspect_ratio"],
    [{ image_config: { colour: "red" } }, "image_config"],
    [{ image_config: { image_size: "4K" } }, "image_config.image_size"],
  ])("%j → 400 naming %s, nothing held", async (fields, param) => {
    const user = await freshUser();
    const res = await post(user.key, "/images/generations", Object.assign({ model: "plain", prompt: "a fox" }, fields));
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { param: string; type: string } };
    expect(body.error).toMatchObject({ param, type: "invalid_request_error" });
    const holds = await gw.db.pool.query("select 1 from quota_holds h join quota_accounts a on a.id = h.account_id where a.user_id = $1", [
      user.id,
    ]);
    expect(holds.rowCount).toBe(0);
  });

  it("output_compression 0 is accepted as 0, a chat model is not an image model", async () => {
    const user = await freshUser();
    const ok = await post(user.key, "/images/generations", {
      model: "plain",
      prompt: "a fox",
      output_format: "jpeg",
      output_compression: 0,
    });
    expect(ok.status).toBe(200);
    const chat = await post(user.key, "/images/generations", { model: "m1", prompt: "a fox" });
    expect(chat.status).toBe(404);
  });
});

describe("image edits (JSON)", () => {
  const image = dataUri("image/png", MOCK_IMAGES.png);

  it("answers b64_json by default; images as strings, {image_url: string} and {image_url: {url}}; url gives a data: URI", async () => {
    const user = await freshUser();
    for (const images of [[image], [{ image_url: image }], [{ image_url: { url: image } }, image]]) {
      const res = await post(user.key, "/images/edits", { model: "plain", prompt: "add a hat", images, output_format: "png" });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: { b64_json?: string; url?: string }[] };
      expect(validateOpenAI("ImagesResponse", body)).toEqual([]);
      expect(body.data[0]).toEqual({ b64_json: MOCK_IMAGES.png.toString("base64") });
    }
    const asUrl = await post(user.key, "/images/edits", { model: "plain", prompt: "add a hat", images: [image], response_format: "url" });
    expect(((await asUrl.json()) as { data: { url: string }[] }).data[0]!.url).toBe(dataUri("image/png", MOCK_IMAGES.png));
    const s = await settled(user.id, 4);
    expect(s.holds.every((h) => h.status === "posted")).toBe(true);
  });

  it.each([
    [{ images: [] }, "images"],
    [{ images: "x" }, "images"],
    [{ images: [{ url: "x" }] }, "images[0]"],
    [{ images: Array.from({ length: 17 }, () => "x") }, "images"],
    [{ partial_images: -1 }, "partial_images"],
    [{ stream: "yes" }, "stream"],
  ])("%j → 400 naming %s", async (fields, param) => {
    const user = await freshUser();
    const res = await post(user.key, "/images/edits", Object.assign({ model: "plain", prompt: "add a hat", images: [image] }, fields));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
  });

  it("streams the upstream's image events byte for byte, valid by OpenAI's description, billed from the completed event, the charge in a comment", async () => {
    const user = await freshUser();
    const body = { model: "plain", prompt: "add a scarf", images: [image], stream: true, partial_images: 2 };
    const res = await post(user.key, "/images/edits", body);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const text = await res.text();
    const upstream = await fetch(`${mock.baseUrl}/images/edits`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "gpt-image-1",
        prompt: "add a scarf",
        images: [{ image_url: image }],
        stream: true,
        partial_images: 2,
      }),
    });
    const upstreamText = await upstream.text();
    // The events are the upstream's bytes; the charge comes in a comment before the end (docs/api.md, "Charges").
    const comment = /^: x-gateway-charge=(\d+)\n\n/m;
    const charged = comment.exec(text)?.[1];
    expect(text.replace(comment, "")).toBe(upstreamText);
    const events = parseFrames([text]);
    expect(events.map((e) => e.data.type)).toEqual(["image_edit.partial_image", "image_edit.partial_image", "image_edit.completed"]);
    for (const e of events) expect(validateOpenAI("ImageEditStreamEvent", e.data)).toEqual([]);
    const completed = events.at(-1)!.data;
    const classified = classifyImageUsage(completed.usage);
    if (classified.kind !== "native") throw new Error("the mock's stream usage should be complete");
    const s = await settled(user.id);
    expect(s.log).toMatchObject({
      streamed: true,
      usage_source: "upstream",
      quota_charged: String(nativeImageQuota(classified.usage, RATES)),
    });
    expect(charged).toBe(s.log.quota_charged);
  });

  it("a stream whose first image is invalid is a plain 502, its hold released", async () => {
    const user = await freshUser();
    const res = await post(user.key, "/images/edits", { model: "notimage", prompt: "add a scarf", images: [image], stream: true });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("upstream_invalid_output");
    const s = await settled(user.id);
    expect(s.hold.status).toBe("voided");
  });

  it("a stream without usage falls back to the per-image floor, marked absent", async () => {
    const user = await freshUser();
    const res = await post(user.key, "/images/edits", { model: "nousage", prompt: "add a scarf", images: [image], stream: true });
    expect(res.status).toBe(200);
    await res.text();
    const s = await settled(user.id);
    expect(s.log).toMatchObject({
      usage_source: "estimated",
      gpt_image_usage_fallback: "absent",
      quota_charged: String(fallbackImageQuota({ images: 1, size: undefined, kind: "edit", providerTotalTokens: undefined }, RATES)),
    });
  });
});

describe("image edits (multipart, the official SDK)", () => {
  const png = () => toFile(MOCK_IMAGES.png, "in.png", { type: "image/png" });

  it("one image, several images (image[]), and a mask: b64_json by default, billed as edits", async () => {
    const user = await freshUser();
    const one = await user.client.images.edit({ model: "plain", prompt: "add a hat", image: await png() });
    expect(validateOpenAI("ImagesResponse", one)).toEqual([]);
    expect(one.data![0]!.b64_json).toBe(MOCK_IMAGES.png.toString("base64"));
    const several = await user.client.images.edit({
      model: "other",
      prompt: "merge them",
      image: [await png(), await toFile(MOCK_IMAGES.jpeg, "b.jpg", { type: "image/jpeg" })],
      mask: await png(),
      n: 2,
      response_format: "url",
    });
    expect(several.data).toHaveLength(2);
    expect(several.data![0]!.url).toMatch(/^data:image\/png;base64,/);
    const s = await settled(user.id, 2);
    const other = s.logs.find((l) => l.public_model === "other")!;
    expect(other.quota_charged).toBe(
      String(fallbackImageQuota({ images: 2, size: undefined, kind: "edit", providerTotalTokens: undefined }, RATES)),
    );
  });

  it("a text file as the image is a 400 naming image, nothing held", async () => {
    const user = await freshUser();
    const err = await user.client.images
      .edit({ model: "plain", prompt: "add a hat", image: await toFile(Buffer.from("not a picture"), "a.png", { type: "image/png" }) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("image");
  });

  it("images.edit({stream: true}) iterated to the end: partial and completed events, settled once", async () => {
    const user = await freshUser();
    const stream = await user.client.images.edit({
      model: "plain",
      prompt: "add a scarf",
      image: await png(),
      stream: true,
      partial_images: 1,
    });
    const types: string[] = [];
    for await (const event of stream) {
      types.push(event.type);
      expect(validateOpenAI("ImageEditStreamEvent", event)).toEqual([]);
    }
    expect(types).toEqual(["image_edit.partial_image", "image_edit.completed"]);
    const s = await settled(user.id);
    expect(s.log).toMatchObject({ streamed: true, status: 200, usage_source: "upstream" });
  });
});
