import path from "node:path";
import { fileTypeFromBuffer } from "file-type";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatQuota } from "../../src/billing/chat-quota.js";
import { classifyImageUsage, nativeImageQuota, type ImageRates } from "../../src/billing/image-quota.js";
import { perSecondRate, videoCharge } from "../../src/billing/video-quota.js";
import { configFindings } from "../../src/config/findings.js";
import { loadConfigFile } from "../../src/config/load.js";
import type { Config } from "../../src/config/schema.js";
import { pollDueVideoJobs } from "../../src/media/video-poller.js";
import { geminiOutputImageTokens } from "../../src/mock-upstream/gemini-images.js";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { mockVideoBytes } from "../../src/mock-upstream/openai-videos.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { addImageUsages } from "../../src/providers/upstream-images/add-image-usages.js";
import { geminiImageBody, geminiImageUsage } from "../../src/providers/gemini/image-generation.js";
import type { NeutralImageRequest } from "../../src/providers/types.js";
import { videoPollDeps } from "../../src/runtime/services.js";
import { sdkUser } from "../helpers/sdk-user.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { countLogWrites, quiesce, rowsOf, settled } from "../helpers/metering-checks.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { until } from "../helpers/poll.js";

// Issue 33's done-criterion: the operator examples (examples/openai.yaml, examples/gemini.yaml) serve the whole
// media surface. Each file is loaded as `serve --config` loads it, its secrets from the environment; only where
// its providers are (the mock upstream instead of api.openai.com / generativelanguage.googleapis.com) and the
// loopback download allowance change: its models, prices, plans and native_usage_models are served as written.
// The official OpenAI SDK is the gateway's client throughout (its generic post/get for the video routes).

const MOCK_KEY = "sk-mock-examples";

let mock: MockUpstream;
let openaiExample: { config: Config; gw: TestGateway };
let geminiExample: { config: Config; gw: TestGateway };

/** An example file as the gateway loads it, pointed at the mock upstream. */
function loadExample(file: string): Config {
  const loaded = loadConfigFile(path.resolve("examples", file), { OPENAI_API_KEY: MOCK_KEY, GEMINI_API_KEY: MOCK_KEY });
  // `serve` refuses a config with an error finding: the example must have none.
  expect(configFindings(loaded).filter((f) => f.level === "error")).toEqual([]);
  const providers = Object.fromEntries(
    Object.entries(loaded.providers).map(([id, provider]) => {
      // The secret came from the environment, as an operator's does.
      expect(provider.api_key).toBe(MOCK_KEY);
      // An openai provider's base URL includes /v1; a gemini one is the host root.
      return [id, { ...provider, base_url: provider.protocol === "gemini" ? mock.url : mock.baseUrl }];
    }),
  );
  const download = { ...loaded.media.download, allow_private: ["127.0.0.1"] };
  return { ...loaded, providers, media: { ...loaded.media, download } };
}

async function serveExample(file: string) {
  const config = loadExample(file);
  const gw = await startTestGateway({ loaded: config });
  countLogWrites(gw);
  return { config, gw };
}

beforeAll(async () => {
  mock = await startMockUpstream({ apiKey: MOCK_KEY });
  openaiExample = await serveExample("openai.yaml");
  geminiExample = await serveExample("gemini.yaml");
});

afterAll(async () => {
  await openaiExample?.gw.close();
  await geminiExample?.gw.close();
  await mock?.close();
});

/** A user on the example's default plan, with a key and the OpenAI SDK on the gateway. */
const freshUser = (gw: TestGateway) => sdkUser(gw, "examples-media");

function modelOf(config: Config, id: string) {
  const model = config.models[id];
  if (!model) throw new Error(`the example has no model ${id}`);
  return model;
}

/** The default pricing group's multiplier: every key created here is in it. */
const groupMultiplier = (config: Config) => config.pricing_groups["default"]!.multiplier;

const holdsOf = (gw: TestGateway, userId: string) =>
  rowsOf(gw.db.pool, "select h.* from quota_holds h join quota_accounts a on a.id = h.account_id where a.user_id = $1", [userId]);

const pngOf = async (bytes: Buffer) => (await fileTypeFromBuffer(bytes))?.mime;
const dataUriBytes = (uri: string) => {
  const match = /^data:image\/png;base64,([A-Za-z0-9+/]+=*)$/.exec(uri);
  expect(match).not.toBeNull();
  return Buffer.from(match![1]!, "base64");
};

describe("examples/openai.yaml", () => {
  type Job = { id: string; status: string; duration: number; quota_held: number; videos?: { url: string; duration: number }[] };

  /** Makes the job due now (as if its poll interval had passed) and runs one round of this process's poller. */
  async function pollNow(gw: TestGateway, id: string) {
    await gw.db.pool.query("update video_jobs set next_poll_at = now() where id = $1", [id]);
    const round = await pollDueVideoJobs(videoPollDeps(gw.services));
    expect(round.failed).toEqual([]);
  }

  it("sora-2: a job of 8 s at 16:9 reaches OpenAI's video API as seconds 8, size 1280x720, completes, streams its video, charged once", async () => {
    const { config, gw } = openaiExample;
    const user = await freshUser(gw);
    const sora = modelOf(config, "sora-2");
    // docs/billing.md, "Video quota": seconds × units_per_second × token_multiplier × group multiplier.
    const expected = videoCharge(
      [8],
      8,
      perSecondRate({
        unitsPerSecond: sora.video_price!.units_per_second,
        tokenMultiplier: sora.token_multiplier,
        groupMultiplier: groupMultiplier(config),
      }),
    );
    // The example sets no multiplier: 8 × units_per_second.
    expect(expected).toBe(8n * BigInt(sora.video_price!.units_per_second));

    const { data: job, response } = await user.client
      .post<Job>("/video/generations", { body: { model: "sora-2", prompt: "a cat surfing", duration: 8, aspect_ratio: "16:9" } })
      .withResponse();
    expect(job).toMatchObject({ status: "queued", duration: 8, quota_held: Number(expected) });

    const row = await until("the job to complete", async () => {
      await pollNow(gw, job.id);
      const [current] = await rowsOf(gw.db.pool, "select * from video_jobs where id = $1", [job.id]);
      return current!.status === "completed" ? current! : undefined;
    });
    expect(row).toMatchObject({ provider: "openai", charged: String(expected) });

    // What the mock was asked for, read back from it with OpenAI's own SDK.
    const upstreamId = row.upstream_job_id as string;
    const direct = new OpenAI({ apiKey: MOCK_KEY, baseURL: mock.baseUrl, maxRetries: 0 });
    expect(await direct.videos.retrieve(upstreamId)).toMatchObject({ model: "sora-2", seconds: "8", size: "1280x720" });

    const seen = await user.client.get<Job>(`/video/generations/${job.id}`);
    expect(seen).toMatchObject({ status: "completed", videos: [{ url: `/v1/video/generations/${job.id}/content/0`, duration: 8 }] });
    const content = await user.client.get(`/video/generations/${job.id}/content/0`).asResponse();
    expect(content.status).toBe(200);
    expect(content.headers.get("content-type")).toBe("video/mp4");
    expect(Buffer.from(await content.arrayBuffer()).equals(mockVideoBytes(upstreamId))).toBe(true);

    // One charge, also after another poll: the job's one durable hold posted at the expected amount, one
    // request-log row for the submission saying so, and nothing else drawn from the account.
    await pollNow(gw, job.id);
    await quiesce(gw);
    expect(await holdsOf(gw, user.id)).toMatchObject([{ request_id: `video:${job.id}`, status: "posted", charged: String(expected) }]);
    const logs = await rowsOf(gw.db.pool, "select * from request_logs where user_id = $1", [user.id]);
    expect(logs).toMatchObject([
      { request_id: response.headers.get("x-request-id"), status: 200, public_model: "sora-2", quota_charged: String(expected) },
    ]);
    const [account] = await rowsOf(gw.db.pool, "select * from quota_account_balances where user_id = $1", [user.id]);
    expect(account).toMatchObject({ debits_posted: String(expected), debits_pending: "0" });
  });

  it("sora-2: a duration OpenAI's video API cannot make (5 s) is a 400 naming duration, nothing held", async () => {
    const { gw } = openaiExample;
    const user = await freshUser(gw);
    const err = await user.client
      .post("/video/generations", { body: { model: "sora-2", prompt: "x", duration: 5 } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ status: 400, param: "duration", code: "invalid_value" });
    await quiesce(gw);
    expect(await holdsOf(gw, user.id)).toEqual([]);
  });

  it("gpt-image-1: images.generate answers an image, charged by its native usage", async () => {
    const { config, gw } = openaiExample;
    const user = await freshUser(gw);
    const images = await user.client.images.generate({ model: "gpt-image-1", prompt: "a lighthouse at dusk" });
    expect(validateOpenAI("ImagesResponse", images)).toEqual([]);
    expect(images.data).toHaveLength(1);
    expect(await pngOf(dataUriBytes(images.data![0]!.url!))).toBe("image/png");
    const usage = classifyImageUsage(images.usage);
    if (usage.kind !== "native") throw new Error(`the mock's usage should be complete: ${JSON.stringify(usage)}`);
    const rates: ImageRates = {
      tokenMultiplier: modelOf(config, "gpt-image-1").token_multiplier,
      groupMultiplier: groupMultiplier(config),
    };
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({
      status: 200,
      quota_charged: String(nativeImageQuota(usage.usage, rates)),
      gpt_image_usage_fallback: null,
    });
  });
});

describe("examples/gemini.yaml", () => {
  const IMAGE_MODEL = "gemini-2.5-flash-image";

  /** The usage the mock reports for one call of `request` to the example's image model, asked directly. */
  async function directUsage(config: Config, request: NeutralImageRequest) {
    const upstream = modelOf(config, IMAGE_MODEL).upstream;
    const res = await fetch(`${mock.url}/v1beta/models/${upstream}:generateContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": MOCK_KEY },
      body: JSON.stringify(geminiImageBody(request, upstream)),
    });
    expect(res.status).toBe(200);
    return geminiImageUsage(((await res.json()) as { usageMetadata?: unknown }).usageMetadata);
  }

  /** The native formula (docs/billing.md, "Image quota") at the example's rates: the example designates the model. */
  function nativeCharge(config: Config, usage: unknown) {
    expect(config.media.images.native_usage_models).toContain(modelOf(config, IMAGE_MODEL).upstream);
    const classified = classifyImageUsage(usage);
    if (classified.kind !== "native") throw new Error(`the mock's usage should be complete: ${JSON.stringify(classified)}`);
    const rates: ImageRates = { tokenMultiplier: modelOf(config, IMAGE_MODEL).token_multiplier, groupMultiplier: groupMultiplier(config) };
    return String(nativeImageQuota(classified.usage, rates));
  }

  it("images.generate, n 2, b64_json, image_config 21:9 at 2K: two different PNGs, charged natively on the mock's usage", async () => {
    const { config, gw } = geminiExample;
    const user = await freshUser(gw);
    // Not in the SDK's types: Gemini's own image settings (docs/api.md, "Images").
    const params = {
      model: IMAGE_MODEL,
      prompt: "a harbour at dawn",
      n: 2,
      response_format: "b64_json" as const,
      image_config: { aspect_ratio: "21:9", image_size: "2K" },
    };
    const images = await user.client.images.generate(params);
    expect(validateOpenAI("ImagesResponse", images)).toEqual([]);
    expect(images.data).toHaveLength(2);
    const bytes = images.data!.map((item) => Buffer.from(item.b64_json!, "base64"));
    for (const image of bytes) expect(await pngOf(image)).toBe("image/png");
    expect(bytes[0]!.equals(bytes[1]!)).toBe(false);

    const one = await directUsage(config, { prompt: params.prompt, images: [], n: 1, aspectRatio: "21:9", imageSize: "2K" });
    const both = addImageUsages(one, one);
    expect(images.usage).toEqual(both);
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ status: 200, quota_charged: nativeCharge(config, both), gpt_image_usage_fallback: null });
  });

  it("image_config reaches Gemini's ImageConfig: 4K costs the mock's 4K tokens, a ratio Gemini refuses is its 400", async () => {
    const { gw } = geminiExample;
    const user = await freshUser(gw);
    const big = { model: IMAGE_MODEL, prompt: "a harbour", image_config: { aspect_ratio: "21:9", image_size: "4K" } };
    expect((await user.client.images.generate(big)).usage?.output_tokens).toBe(geminiOutputImageTokens("4K"));
    // The gateway passes the ratio on; only the mock, as Gemini, knows 7:3 is not one of its ratios.
    const odd = { model: IMAGE_MODEL, prompt: "a harbour", image_config: { aspect_ratio: "7:3" } };
    const err = await user.client.images.generate(odd).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ code: "upstream_invalid_request" });
    const s = await settled([gw], user.id, 2);
    expect(s.holds.map((h) => h.status).sort()).toEqual(["posted", "voided"]);
  });

  it("images.generate with response_format url: a data: URI of a PNG", async () => {
    const { config, gw } = geminiExample;
    const user = await freshUser(gw);
    const images = await user.client.images.generate({ model: IMAGE_MODEL, prompt: "a lighthouse", response_format: "url" });
    expect(images.data).toHaveLength(1);
    expect(await pngOf(dataUriBytes(images.data![0]!.url!))).toBe("image/png");
    const usage = await directUsage(config, { prompt: "a lighthouse", images: [], n: 1 });
    const s = await settled([gw], user.id);
    expect(s.log.quota_charged).toBe(nativeCharge(config, usage));
  });

  it("images.edit with a data: URI input image: the image sent inline, a PNG back, the input image charged", async () => {
    const { config, gw } = geminiExample;
    const user = await freshUser(gw);
    const input = `data:image/png;base64,${MOCK_IMAGES.png.toString("base64")}`;
    const edited = await user.client.post<OpenAI.ImagesResponse>("/images/edits", {
      body: { model: IMAGE_MODEL, prompt: "add a hat", images: [input] },
    });
    expect(validateOpenAI("ImagesResponse", edited)).toEqual([]);
    expect(await pngOf(Buffer.from(edited.data![0]!.b64_json!, "base64"))).toBe("image/png");
    const usage = await directUsage(config, {
      prompt: "add a hat",
      images: [{ mimeType: "image/png", data: MOCK_IMAGES.png.toString("base64") }],
      n: 1,
    });
    expect(edited.usage).toEqual(usage);
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ status: 200, route: "/v1/images/edits", quota_charged: nativeCharge(config, usage) });
  });

  it("gemini-2.5-flash-image-chat: chat.completions with modalities text and image answers message.images[0] as a PNG data: URI", async () => {
    const { config, gw } = geminiExample;
    const user = await freshUser(gw);
    const params = {
      model: "gemini-2.5-flash-image-chat",
      messages: [{ role: "user" as const, content: "Draw a lighthouse" }],
      // The SDK types modalities as text and audio; OpenRouter's and Gemini's image output asks for "image".
      modalities: ["text", "image"] as unknown as ("text" | "audio")[],
    };
    const answer = await user.client.chat.completions.create(params);
    expect(validateOpenAI("CreateChatCompletionResponse", answer)).toEqual([]);
    const message = answer.choices[0]!.message as (typeof answer.choices)[0]["message"] & {
      images?: { type: string; image_url: { url: string } }[];
    };
    expect(message.images).toHaveLength(1);
    expect(message.images![0]!.type).toBe("image_url");
    expect(await pngOf(dataUriBytes(message.images![0]!.image_url.url))).toBe("image/png");

    // Billed by the chat rule at the example's ratios on the usage Gemini reported (image tokens are output).
    const model = modelOf(config, "gemini-2.5-flash-image-chat");
    const { prompt_tokens: prompt, completion_tokens: completion } = answer.usage!;
    const expected = chatQuota(
      { promptTokens: prompt, completionTokens: completion, cachedTokens: answer.usage!.prompt_tokens_details?.cached_tokens ?? 0 },
      {
        completionRatio: model.completion_ratio,
        cachedRatio: model.cached_ratio,
        tokenMultiplier: model.token_multiplier,
        groupMultiplier: groupMultiplier(config),
      },
    );
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ status: 200, usage_source: "upstream", output_tokens: completion, quota_charged: String(expected) });
  });
});
