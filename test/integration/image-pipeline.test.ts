import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { deliverImage, ImageDeliveryError } from "../../src/providers/upstream-images/image-delivery.js";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { type MockUpstream, startMockUpstream } from "../../src/mock-upstream/server.js";
import { createOpenAIAdapter } from "../../src/providers/openai/index.js";
import { createSafeDownloader } from "../../src/providers/safe-download.js";
import type { ProviderAdapter, Target } from "../../src/providers/types.js";

// The image pieces of issue 14 end to end, before a route joins them: the OpenAI adapter asks the mock upstream
// for images, delivery types them by their bytes, and an upstream URL is fetched by the SSRF-safe downloader,
// which reaches the mock on loopback only because the config allows it.

const API_KEY = "sk-mock-images";
let mock: MockUpstream;
let adapter: ProviderAdapter;
let target: Target;

const configFor = (allowPrivate: string[]) =>
  parseConfig(
    {
      providers: { main: { protocol: "openai", base_url: "http://127.0.0.1:9/v1", api_key: API_KEY } },
      models: { img: { kind: "image", upstream: "gpt-image-1", targets: ["main"] } },
      media: { download: { allow_private: allowPrivate } },
    },
    "test config",
  );

beforeAll(async () => {
  mock = await startMockUpstream({ port: 0, apiKey: API_KEY });
  const config = configFor(["127.0.0.1"]);
  const provider = Object.assign({}, config.providers.main!, { base_url: mock.baseUrl });
  adapter = createOpenAIAdapter(provider, config.limits.upstream_answer_bytes);
  target = { providerId: "main", provider, upstreamModel: "gpt-image-1" };
});
afterAll(async () => {
  await adapter?.close();
  await mock?.close();
});

const generate = (body: Record<string, unknown>, faults: Record<string, string> = {}) =>
  adapter.imageGenerations!(Object.assign({ model: "gpt-image-1", prompt: "a red square" }, body), {
    target,
    signal: AbortSignal.timeout(5000),
    clientHeaders: faults,
  });

describe("image generation through the adapter, delivery and the safe downloader", () => {
  const download = createSafeDownloader(configFor(["127.0.0.1"]).media.download);
  const deps = { download, signal: AbortSignal.timeout(5000) };

  it("base64 from the upstream becomes a data: URI typed by the bytes, with its usage", async () => {
    const result = await generate({ output_format: "webp" });
    expect(result.usage).toMatchObject({ promptTokens: expect.any(Number), completionTokens: expect.any(Number) });
    const [item] = result.body.data as { b64_json: string }[];
    const delivered = await deliverImage(item!, "url", deps);
    expect(delivered.url).toBe(`data:image/webp;base64,${MOCK_IMAGES.webp.toString("base64")}`);
  });

  it("an upstream URL is downloaded on loopback when allowed, refused when not; its address never reaches the client", async () => {
    const result = await generate({}, { "x-mock-image": "url" });
    const [item] = result.body.data as { url: string }[];
    expect(item!.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    const delivered = await deliverImage(item!, "b64_json", deps);
    expect(delivered).toEqual({ b64_json: MOCK_IMAGES.png.toString("base64") });
    const strict = { download: createSafeDownloader(configFor([]).media.download), signal: AbortSignal.timeout(5000) };
    await expect(deliverImage(item!, "url", strict)).rejects.toBeInstanceOf(ImageDeliveryError);
  });

  it.each([["not-image"], ["invalid-base64"], ["url-404"], ["url-redirect-private"], ["svg"]])(
    "x-mock-image: %s is refused as invalid output, never delivered",
    async (fault) => {
      const result = await generate({}, { "x-mock-image": fault });
      const [item] = result.body.data as { b64_json?: string; url?: string }[];
      const refusal = await deliverImage(item!, "url", deps).then(
        () => null,
        (err: unknown) => err,
      );
      expect(refusal).toBeInstanceOf(ImageDeliveryError);
      expect(String((refusal as Error).message)).not.toContain("127.0.0.1");
    },
  );
});
