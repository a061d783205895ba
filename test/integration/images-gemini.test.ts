import { Writable } from "node:stream";
import { fileTypeFromBuffer } from "file-type";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  classifyImageUsage,
  fallbackImageQuota,
  imageQuotaEstimate,
  nativeImageQuota,
  type ImageRates,
} from "../../src/billing/image-quota.js";
import { createLogger } from "../../src/logger.js";
import { GEMINI_INPUT_IMAGE_TOKENS, geminiOutputImageTokens } from "../../src/mock-upstream/gemini-images.js";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { addImageUsages } from "../../src/providers/upstream-images/add-image-usages.js";
import { geminiImageBody, geminiImageUsage } from "../../src/providers/gemini/image-generation.js";
import type { NeutralImageRequest } from "../../src/providers/types.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { jsonAnswer, startRecordingUpstream, type RecordingUpstream } from "../helpers/recording-upstream.js";
import { sdkUser } from "../helpers/sdk-user.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { countLogWrites, settled as settledOnce } from "../helpers/metering-checks.js";
import { validateOpenAI } from "../helpers/openapi.js";

// /v1/images/generations and /v1/images/edits on `gemini` targets, the official OpenAI SDK as the client, over
// real HTTP, a real database and the mock's Gemini image models (faults through a proxy, one provider per fault):
// inline images delivered typed by their bytes, image_config passed as ImageConfig, n as n calls, native charges
// from usageMetadata for a designated model, the fallback with its mark, and every refusal released.

const RATES: ImageRates = { tokenMultiplier: 2.5, groupMultiplier: 1 };
const UPSTREAM = "gemini-2.5-flash-image";

const FAULTS: Record<string, Record<string, string>> = {
  gplain: {},
  gblocked: { "x-mock-gemini-image": "blocked" },
  gsafety: { "x-mock-gemini-image": "image-safety" },
  gnoimage: { "x-mock-gemini-image": "no-image" },
  gnotimage: { "x-mock-gemini-image": "not-an-image" },
  gnousage: { "x-mock-gemini-image": "no-usage" },
  gnomodality: { "x-mock-gemini-image": "no-modality" },
};

let mock: MockUpstream;
let proxy: FaultProxy;
/** A Gemini that answers one call of a request and refuses the next (503): `n` calls, one of them failing. */
let half: RecordingUpstream;
let gw: TestGateway;
const logLines: string[] = [];

beforeAll(async () => {
  mock = await startMockUpstream();
  proxy = await startFaultProxy(mock.url);
  half = await startRecordingUpstream();
  const providers = Object.fromEntries(
    Object.entries(FAULTS).map(([id, faults]) => [
      id,
      { protocol: "gemini" as const, base_url: proxy.baseUrl(faults).replace(/\/v1$/, "") },
    ]),
  );
  providers.ghalf = { protocol: "gemini" as const, base_url: half.url };
  const imageModel = (provider: string, upstream = UPSTREAM) => ({
    kind: "image" as const,
    upstream,
    // A second target that would answer: a refusal or an invalid answer must never reach it.
    targets: [provider, "gplain"],
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
        ...Object.fromEntries([...Object.keys(FAULTS), "ghalf"].map((id) => [id, imageModel(id)])),
        // Not designated: the per-image rule, unmarked.
        gother: imageModel("gplain", "gemini-3-pro-image-preview"),
      },
      media: { images: { native_usage_models: ["gpt-image-1", UPSTREAM] }, download: { allow_private: ["127.0.0.1"] } },
      plans: { basic: { daily_tokens: 1_000_000, context_limit: 100_000 } },
      default_plan: "basic",
    },
  });
  countLogWrites(gw);
});

afterAll(async () => {
  await gw?.close();
  await half?.close();
  await proxy?.close();
  await mock?.close();
});

const freshUser = () => sdkUser(gw, "gemini-images", "basic");

const settled = (userId: string, requests = 1) => settledOnce([gw], userId, requests);

function post(key: string, path: string, body: unknown) {
  return fetch(`${gw.url}/v1${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** What the mock reports for one call of the same request, asked directly, as the image quota reads it. */
async function directUsage(request: NeutralImageRequest, faults: Record<string, string> = {}) {
  const res = await fetch(`${mock.url}/v1beta/models/${UPSTREAM}:generateContent`, {
    method: "POST",
    headers: Object.assign({ "content-type": "application/json" }, faults),
    body: JSON.stringify(geminiImageBody(request, UPSTREAM)),
  });
  return geminiImageUsage(((await res.json()) as { usageMetadata?: unknown }).usageMetadata);
}

const nativeCharge = (usage: unknown) => {
  const classified = classifyImageUsage(usage);
  if (classified.kind !== "native") throw new Error(`the mock's usage should be complete: ${JSON.stringify(classified)}`);
  return nativeImageQuota(classified.usage, RATES);
};

const generateCalls = (since: number) => proxy.requests.slice(since).filter((r) => r.path.endsWith(":generateContent"));
const dataUri = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString("base64")}`;

async function holdCount(userId: string) {
  const holds = await gw.db.pool.query("select 1 from quota_holds h join quota_accounts a on a.id = h.account_id where a.user_id = $1", [
    userId,
  ]);
  return holds.rowCount;
}

describe("image generation on a gemini target", () => {
  it("answers a data: URI typed by the bytes (SDK), the usage as ImageGenUsage, billed by native usage exactly", async () => {
    const user = await freshUser();
    const images = await user.client.images.generate({ model: "gplain", prompt: "a lighthouse at dusk" });
    expect(validateOpenAI("ImagesResponse", images)).toEqual([]);
    expect(images.data).toHaveLength(1);
    const url = images.data![0]!.url!;
    expect(url).toMatch(/^data:image\/png;base64,/);
    expect((await fileTypeFromBuffer(Buffer.from(url.slice(url.indexOf(",") + 1), "base64")))?.mime).toBe("image/png");
    const usage = await directUsage({ prompt: "a lighthouse at dusk", images: [], n: 1 });
    expect(images.usage).toEqual(usage);
    const s = await settled(user.id);
    expect(s.hold).toMatchObject({
      status: "posted",
      amount: String(imageQuotaEstimate({ images: 1, size: undefined, kind: "generation" }, RATES)),
    });
    expect(s.log).toMatchObject({
      status: 200,
      quota_charged: String(nativeCharge(usage)),
      usage_source: "upstream",
      gpt_image_usage_fallback: null,
      route: "/v1/images/generations",
    });
  });

  it("n=2 is two calls: two different PNGs in b64_json, their usages added and charged natively", async () => {
    const user = await freshUser();
    const before = proxy.requests.length;
    const images = await user.client.images.generate({ model: "gplain", prompt: "two foxes", n: 2, response_format: "b64_json" });
    expect(images.data).toHaveLength(2);
    const bytes = images.data!.map((item) => Buffer.from(item.b64_json!, "base64"));
    for (const image of bytes) expect((await fileTypeFromBuffer(image))?.mime).toBe("image/png");
    expect(bytes[0]!.equals(bytes[1]!)).toBe(false);
    expect(images.data!.every((item) => item.url === undefined)).toBe(true);
    expect(generateCalls(before)).toHaveLength(2);
    const one = await directUsage({ prompt: "two foxes", images: [], n: 1 });
    const s = await settled(user.id);
    expect(s.log.quota_charged).toBe(String(nativeCharge(addImageUsages(one, one))));
  });

  it("n=2 with one call refused (503): nothing of the target that failed is delivered or charged; the next target answers, charged once", async () => {
    const user = await freshUser();
    const image = { inlineData: { mimeType: "image/png", data: MOCK_IMAGES.png.toString("base64") } };
    const usageMetadata = {
      promptTokenCount: 5,
      candidatesTokenCount: 1290,
      totalTokenCount: 1295,
      promptTokensDetails: [{ modality: "TEXT", tokenCount: 5 }],
      candidatesTokensDetails: [{ modality: "IMAGE", tokenCount: 1290 }],
    };
    half.requests.length = 0;
    half.answers = [
      jsonAnswer({ candidates: [{ content: { role: "model", parts: [image] }, finishReason: "STOP", index: 0 }], usageMetadata }),
      jsonAnswer({ error: { code: 503, message: "overloaded", status: "UNAVAILABLE" } }, 503),
    ];
    const before = proxy.requests.length;
    const images = await user.client.images.generate({ model: "ghalf", prompt: "two owls", n: 2, response_format: "b64_json" });
    expect(half.requests).toHaveLength(2);
    expect(images.data).toHaveLength(2);
    // The fallback target (the mock, through the proxy) made both images: its own two calls.
    expect(generateCalls(before)).toHaveLength(2);
    const one = await directUsage({ prompt: "two owls", images: [], n: 1 });
    const s = await settled(user.id);
    expect(s.holds).toHaveLength(1);
    expect(s.log).toMatchObject({ status: 200, provider: "gplain", quota_charged: String(nativeCharge(addImageUsages(one, one))) });
  });

  it.each([
    ["2K", "16:9"],
    ["4K", "9:16"],
  ])(
    "image_config image_size %s and aspect_ratio %s reach Gemini's ImageConfig, and the charge follows",
    async (imageSize, aspectRatio) => {
      const user = await freshUser();
      const res = await post(user.key, "/images/generations", {
        model: "gplain",
        prompt: "a harbour",
        image_config: { image_size: imageSize, aspect_ratio: aspectRatio },
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { usage: { output_tokens: number } };
      // The mock's image costs 2000 tokens at 4K only: the size reached it.
      expect(body.usage.output_tokens).toBe(geminiOutputImageTokens(imageSize));
      const usage = await directUsage({ prompt: "a harbour", images: [], n: 1, imageSize, aspectRatio });
      const s = await settled(user.id);
      expect(s.hold.amount).toBe(String(imageQuotaEstimate({ images: 1, size: imageSize, kind: "generation" }, RATES)));
      expect(s.log.quota_charged).toBe(String(nativeCharge(usage)));
    },
  );

  it("an aspect ratio Gemini does not take is its 400, passed on as upstream_invalid_request, nothing charged", async () => {
    const user = await freshUser();
    const res = await post(user.key, "/images/generations", { model: "gplain", prompt: "a hill", image_config: { aspect_ratio: "7:3" } });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ error: { code: "upstream_invalid_request" } });
    expect(text).not.toContain("aspect ratio");
    const s = await settled(user.id);
    expect(s.hold.status).toBe("voided");
  });

  it.each([
    ["gnomodality", "missing_modality", "upstream"],
    ["gnousage", "absent", "estimated"],
  ] as const)("%s: incomplete usage falls back to the per-image floor, marked %s", async (model, reason, source) => {
    const user = await freshUser();
    const res = await post(user.key, "/images/generations", { model, prompt: "a tree", n: 2 });
    expect(res.status).toBe(200);
    const one = await directUsage({ prompt: "a tree", images: [], n: 1 }, FAULTS[model]);
    const total = (addImageUsages(one, one) as { total_tokens?: number } | undefined)?.total_tokens;
    const charge = fallbackImageQuota({ images: 2, size: undefined, kind: "generation", providerTotalTokens: total }, RATES);
    const s = await settled(user.id);
    expect(s.log).toMatchObject({ quota_charged: String(charge), gpt_image_usage_fallback: reason, usage_source: source });
    const lines = logLines.filter((l) => l.includes("IMAGE_USAGE_FALLBACK") && l.includes(res.headers.get("x-request-id")!));
    expect(lines).toHaveLength(1);
  });

  it("a model not designated pays the per-image rule, unmarked", async () => {
    const user = await freshUser();
    const res = await post(user.key, "/images/generations", { model: "gother", prompt: "a cloud" });
    expect(res.status).toBe(200);
    const total = ((await directUsage({ prompt: "a cloud", images: [], n: 1 })) as { total_tokens: number }).total_tokens;
    const s = await settled(user.id);
    expect(s.log).toMatchObject({
      quota_charged: String(fallbackImageQuota({ images: 1, size: undefined, kind: "generation", providerTotalTokens: total }, RATES)),
      gpt_image_usage_fallback: null,
    });
  });

  it.each([
    ["gblocked", 400, "content_policy_violation"],
    ["gsafety", 400, "content_policy_violation"],
    ["gnoimage", 502, "upstream_invalid_output"],
    ["gnotimage", 502, "upstream_invalid_output"],
  ])("%s answers %i %s: nothing charged, the hold released, no other target tried", async (model, status, code) => {
    const user = await freshUser();
    const before = proxy.requests.length;
    const res = await post(user.key, "/images/generations", { model, prompt: "a bird" });
    expect(res.status).toBe(status);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ error: { code } });
    expect(text).not.toMatch(/IMAGE_SAFETY|\bSAFETY\b|NO_IMAGE|finishReason/);
    expect(generateCalls(before)).toHaveLength(1);
    const s = await settled(user.id);
    expect(s.hold.status).toBe("voided");
    expect(s.log).toMatchObject({ status, quota_charged: "0", error_code: code });
  });

  it("the SDK raises a refusal as a BadRequestError naming the prompt", async () => {
    const user = await freshUser();
    const err = await user.client.images.generate({ model: "gblocked", prompt: "a bird" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ code: "content_policy_violation", param: "prompt" });
    await settled(user.id);
  });

  it.each([
    [{ size: "1024x1024" }, "size"],
    [{ background: "transparent" }, "background"],
    [{ output_format: "webp" }, "output_format"],
    [{ output_compression: 80 }, "output_compression"],
  ])("%j is refused with 400 naming %s before anything is held or sent", async (fields, param) => {
    const user = await freshUser();
    const before = proxy.requests.length;
    const res = await post(user.key, "/images/generations", Object.assign({ model: "gplain", prompt: "a fox" }, fields));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
    expect(proxy.requests.length).toBe(before);
    expect(await holdCount(user.id)).toBe(0);
  });

  it("hints are dropped: quality, style, moderation, size auto, opaque background, png", async () => {
    const user = await freshUser();
    const res = await post(user.key, "/images/generations", {
      model: "gplain",
      prompt: "a fox",
      quality: "high",
      style: "vivid",
      moderation: "low",
      size: "auto",
      background: "opaque",
      output_format: "png",
    });
    expect(res.status).toBe(200);
    await settled(user.id);
  });
});

describe("image edits on a gemini target", () => {
  const png = dataUri("image/png", MOCK_IMAGES.png);

  it("a data: URI image is sent inline: b64_json by default, the input image counted and charged", async () => {
    const user = await freshUser();
    const res = await post(user.key, "/images/edits", { model: "gplain", prompt: "add a hat", images: [png] });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { b64_json: string }[]; usage: { input_tokens_details: { image_tokens: number } } };
    expect(validateOpenAI("ImagesResponse", body)).toEqual([]);
    expect((await fileTypeFromBuffer(Buffer.from(body.data[0]!.b64_json, "base64")))?.mime).toBe("image/png");
    expect(body.usage.input_tokens_details.image_tokens).toBe(GEMINI_INPUT_IMAGE_TOKENS);
    const usage = await directUsage({
      prompt: "add a hat",
      images: [{ mimeType: "image/png", data: MOCK_IMAGES.png.toString("base64") }],
      n: 1,
    });
    const s = await settled(user.id);
    expect(s.log.quota_charged).toBe(String(nativeCharge(usage)));
  });

  it("an http link is fetched by the gateway and sent inline, never as a link", async () => {
    const user = await freshUser();
    const link = `${mock.url}/mock-images/fox.jpg`;
    const res = await post(user.key, "/images/edits", {
      model: "gplain",
      prompt: "add a hat",
      images: [{ image_url: { url: link } }, { image_url: png }],
      response_format: "url",
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { url: string }[]; usage: { input_tokens_details: { image_tokens: number } } };
    expect(body.data[0]!.url).toMatch(/^data:image\/png;base64,/);
    expect(body.usage.input_tokens_details.image_tokens).toBe(2 * GEMINI_INPUT_IMAGE_TOKENS);
    await settled(user.id);
  });

  it.each([
    [`missing`, "a link that 404s"],
    ["text", "a data: URI that is not an image"],
    ["ftp", "a scheme that is not http(s)"],
  ])("%s (%s) is a 400 naming images[1], nothing charged", async (kind) => {
    const user = await freshUser();
    const bad =
      kind === "missing"
        ? `${mock.url}/mock-images/missing-fox.png`
        : kind === "text"
          ? dataUri("image/png", Buffer.from("not a picture"))
          : "ftp://example.test/fox.png";
    const res = await post(user.key, "/images/edits", { model: "gplain", prompt: "add a hat", images: [png, bad] });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ error: { param: "images[1]", code: "invalid_value" } });
    expect(text).not.toContain("127.0.0.1");
    const s = await settled(user.id);
    expect(s.log.quota_charged).toBe("0");
  });

  it("a multipart upload (the SDK's images.edit) works; a mask or stream is refused naming it", async () => {
    const user = await freshUser();
    const file = () => toFile(MOCK_IMAGES.png, "in.png", { type: "image/png" });
    const edited = await user.client.images.edit({ model: "gplain", prompt: "add a hat", image: [await file(), await file()] });
    expect(validateOpenAI("ImagesResponse", edited)).toEqual([]);
    expect(edited.usage?.input_tokens_details.image_tokens).toBe(2 * GEMINI_INPUT_IMAGE_TOKENS);
    const masked = await user.client.images
      .edit({ model: "gplain", prompt: "add a hat", image: await file(), mask: await file() })
      .catch((e: unknown) => e);
    expect(masked).toBeInstanceOf(OpenAI.BadRequestError);
    expect(masked).toMatchObject({ param: "mask" });
    const streamed = await post(user.key, "/images/edits", { model: "gplain", prompt: "add a hat", images: [png], stream: true });
    expect(streamed.status).toBe(400);
    expect(((await streamed.json()) as { error: { param: string } }).error.param).toBe("stream");
    await settled(user.id);
  });
});
