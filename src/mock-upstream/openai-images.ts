import type { Context } from "hono";
import { Hono } from "hono";
import type { MockUpstreamEnv } from "./context.js";
import { checkBody, openai, openaiError, parseBody } from "./dialects.js";
import { LARGE_IMAGE_MODEL, MOCK_IMAGES, type MockImageFormat } from "./mock-images.js";
import { charTokens, digestOf } from "./mock-text.js";
import { type ImagePlan, imageEvents, imagesResponse, MOCK_IMAGES_PATH, PRIVATE_TARGET } from "./openai-images-output.js";
import { editRequest, formAsEdit, generationRequest, type ImageRequest } from "./openai-images-request.js";
import { playEvents } from "./sse.js";

/**
 * OpenAI `POST /v1/images/generations` and `POST /v1/images/edits` (JSON or multipart), and the images the mock
 * serves itself for answers that link to them (`GET /mock-images/<id>.<ext>`). Deterministic: the images are
 * the fixed pictures of ./mock-images.ts, usage follows the documented rule (docs/mock-upstream.md, "Images").
 */

/** What an input image costs (edits): a fixed price per image, whatever its size. */
const INPUT_IMAGE_TOKENS = 85;
/** What each partial image of a stream adds to the output, as OpenAI charges them. */
const PARTIAL_IMAGE_TOKENS = 100;
/** GPT image's output tokens per image by quality, for a square and for a 2:3 or 3:2 image. */
const OUTPUT_TOKENS = { low: [272, 408], medium: [1056, 1584], high: [4160, 6240] } as const;

const SIZES = ["1024x1024", "1024x1536", "1536x1024"] as const;
type Size = (typeof SIZES)[number];
const isSize = (size: string | null | undefined): size is Size => SIZES.includes(size as Size);

function plan(req: ImageRequest): ImagePlan {
  const size = isSize(req.size) ? req.size : "1024x1024";
  const quality = req.quality === "low" || req.quality === "high" ? req.quality : req.quality === "hd" ? "high" : "medium";
  const count = req.stream ? 1 : (req.n ?? 1);
  const partialImages = req.stream ? (req.partial_images ?? 0) : 0;
  const perImage = OUTPUT_TOKENS[quality][size === "1024x1024" ? 0 : 1];
  const inputImages = req.images?.length ?? 0;
  return {
    count,
    format: req.output_format ?? "png",
    size,
    quality,
    background: req.background === "transparent" ? "transparent" : "opaque",
    asUrl: req.response_format === "url",
    // DALL·E 3 rewrites every prompt; the mock says so for a model of that name.
    revisedPrompt: req.model?.includes("dall-e-3") ? `Mock revision: ${req.prompt}` : undefined,
    large: req.model === LARGE_IMAGE_MODEL,
    id: digestOf([req.model ?? null, req.prompt, inputImages]).toString("hex"),
    partialImages,
    textTokens: charTokens(req.prompt.length),
    imageTokens: inputImages * INPUT_IMAGE_TOKENS,
    outputTokens: count * perImage + partialImages * PARTIAL_IMAGE_TOKENS,
  };
}

function answer(c: Context<MockUpstreamEnv>, req: ImageRequest, prefix: "image_generation" | "image_edit"): Response {
  const p = plan(req);
  const faults = c.get("faults");
  if (req.stream) return playEvents(c, imageEvents(p, prefix, faults));
  return c.json(imagesResponse(p, faults, new URL(c.req.url).origin));
}

/** An edit's body: multipart (the SDK's uploads) or JSON (images by URL or file ID). */
async function editBody(c: Context<MockUpstreamEnv>): Promise<ImageRequest | Response> {
  if (!c.req.header("content-type")?.startsWith("multipart/form-data")) return parseBody(c, openai, editRequest);
  const form = await c.req.parseBody({ all: true }).catch(() => undefined);
  if (form === undefined) return openai.error(c, 400, "We could not parse the multipart body of your request.", { code: "invalid_value" });
  return checkBody(c, openai, editRequest, formAsEdit(form));
}

const SERVED_TYPES: Record<string, MockImageFormat> = { png: "png", jpg: "jpeg", webp: "webp", gif: "gif" };

export const openaiImagesRoute = new Hono<MockUpstreamEnv>()
  .post("/v1/images/generations", async (c) => {
    const req = await parseBody(c, openai, generationRequest);
    return req instanceof Response ? req : answer(c, req, "image_generation");
  })
  .post("/v1/images/edits", async (c) => {
    const req = await editBody(c);
    return req instanceof Response ? req : answer(c, req, "image_edit");
  })
  // Served without a key (./app.ts), as a provider's signed image links are.
  .get(`${MOCK_IMAGES_PATH}/:name`, (c) => {
    const name = c.req.param("name");
    const format = SERVED_TYPES[/^[\w-]+\.(\w+)$/.exec(name)?.[1] ?? ""];
    if (format === undefined || name.startsWith("missing-")) return openaiError(c, 404, "No such image.");
    if (name.startsWith("redirect-")) return c.redirect(PRIVATE_TARGET, 302);
    return c.body(new Uint8Array(MOCK_IMAGES[format]), 200, { "content-type": `image/${format}` });
  });
