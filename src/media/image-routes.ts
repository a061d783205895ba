import type { ImageRequest } from "../billing/image-quota.js";
import { deliverJson, deliverRelayed } from "../metering/deliver.js";
import { countTextTokens, estimateTextTokens } from "../metering/estimate.js";
import { deliverImage } from "../providers/upstream-images/image-delivery.js";
import { imagePricing } from "../metering/pricing.js";
import { meteredHandler, type Delivery, type InferenceDeps, type MeteredRequest, type RouteSpec } from "../metering/metered-handler.js";
import { convertResponsesUsage } from "../providers/openai/convert-openai-usage.js";
import type { JsonResult, StreamEvent } from "../providers/types.js";
import { UpstreamError } from "../providers/types.js";
import { validate } from "../server/body.js";
import { ours, vendor } from "../openapi/operation.js";
import { route } from "../server/route.js";
import { meteredOperation } from "../metering/metered-operation.js";
import { METERED_ERROR_CODES } from "../metering/metered-errors.js";
import { readEditBody } from "./edit-body.js";
import { abortSignalOf, deliverImagesAnswer, imageUsageReport } from "./image-answer.js";
import { imageEditRelay } from "./image-edit-relay.js";
import {
  imageEditFormSchema,
  imageEditJsonSchema,
  imageGenerationSchema,
  type ImageEditRequest,
  type ImageGenerationRequest,
} from "./image-request-schema.js";
import { IMAGE_CONFIG_SUPPORT, toUpstreamEdit, toUpstreamGeneration } from "./image-upstream-body.js";
import { geminiImageAsk } from "./gemini-image-request.js";
import { geminiInputImages } from "./gemini-image-inputs.js";
import type { CatalogModel } from "../catalog/catalog.js";
import { extended } from "../objects.js";
import type { NeutralImageRequest } from "../providers/types.js";
import type { UpstreamSignal } from "../providers/upstream-abort.js";

// POST /v1/images/generations and /v1/images/edits (spec "Image generation request", "Image edit request";
// docs/api.md, "Images"): through the one metering path, billed by the image quota (docs/billing.md), every
// image delivered by the gateway itself (src/providers/upstream-images/image-delivery.ts). An `openai` target gets
// the client's body; a `gemini` target its neutral request (src/media/gemini-image-request.ts), which its adapter
// answers as an ImagesResponse, so delivery and billing are the same for both.

/**
 * What any of the model's targets could not honour is refused before anything is held: a fallback may reach any
 * of them, and a request must not be honoured or not depending on which one answers.
 */
function admitFor(model: CatalogModel, checks: Partial<Record<string, () => unknown>>): void {
  for (const protocol of new Set(model.targets.map((target) => target.provider.protocol))) checks[protocol]?.();
}

/** The downloads' AbortSignal for a call's signal (the request's UpstreamAbort, or a signal already). */
const downloadSignal = (signal: UpstreamSignal): AbortSignal => (signal instanceof AbortSignal ? signal : abortSignalOf(signal));

/** The prompt is what admission counts against the plan's context limit. */
const describePrompt = (model: string, prompt: string, streamed: boolean): MeteredRequest => ({
  modelId: model,
  streamed,
  estimate: { promptTokens: estimateTextTokens(prompt), completionTokens: 0 },
  countPrompt: () => countTextTokens(prompt),
  promptParam: "prompt",
});

/** The size the per-image rule reads: `image_config.image_size` when sent (`4K`), else `size`. */
const requestedSize = (body: ImageGenerationRequest) => body.image_config?.image_size ?? body.size;

/** Delivers a JSON ImagesResponse and settles it by the image quota. */
async function deliverImages(
  deps: InferenceDeps,
  answer: JsonResult,
  delivery: Delivery<ImageGenerationRequest | ImageEditRequest>,
): Promise<Response> {
  const { body, meter, upstream } = delivery;
  const delivered = await deliverImagesAnswer(answer, body.response_format, { download: deps.download, signal: abortSignalOf(upstream) });
  const usage = imageUsageReport(
    answer.usage,
    answer.body.usage,
    delivered.images,
    meter.upstream!.upstreamModel,
    deps.config.media.images.native_usage_models,
  );
  // Without any usage the per-image rule bills it: not the upstream's report, so the row says `estimated`.
  const reported = answer.body.usage !== undefined && answer.body.usage !== null;
  return deliverJson(delivery, delivered.parts, reported ? usage : null, async () => usage);
}

export function generations(deps: InferenceDeps): RouteSpec<ImageGenerationRequest> {
  return {
    route: "/v1/images/generations",
    clientProtocol: "openai",
    protocols: ["openai", "gemini"],
    kind: "image",
    parse: (raw) => validate(imageGenerationSchema, raw),
    describe: (body) => describePrompt(body.model, body.prompt, false),
    pricing: (model, key, config, byok, body) =>
      imagePricing({ images: body.n ?? 1, size: requestedSize(body), kind: "generation" })(model, key, config, byok),
    // A setting a provider cannot honour is refused before anything is held.
    admit: async (body, model) =>
      admitFor(model, { openai: () => toUpstreamGeneration(body, IMAGE_CONFIG_SUPPORT.openai), gemini: () => geminiImageAsk(body) }),
    call(adapter, target, body, options) {
      if (target.provider.protocol === "gemini") {
        if (!adapter.generateImages) throw new UpstreamError("connect", null);
        return adapter.generateImages(extended(geminiImageAsk(body), { images: [] }), options);
      }
      if (!adapter.imageGenerations) throw new UpstreamError("connect", null);
      const upstream = toUpstreamGeneration(body, IMAGE_CONFIG_SUPPORT.openai).body;
      upstream.model = target.upstreamModel;
      return adapter.imageGenerations(upstream, options);
    },
    json: (answer, delivery) => deliverImages(deps, answer, delivery),
  };
}

/** The first batch's images checked before the stream is answered, so that a bad first image is a plain 502. */
async function checkFirst(events: StreamEvent[] | null, check: (base64: string) => Promise<void>): Promise<void> {
  for (const event of events ?? []) {
    if (!("done" in event) && typeof event.data.b64_json === "string") await check(event.data.b64_json);
  }
}

function edits(deps: InferenceDeps): RouteSpec<ImageEditRequest> {
  const imageRequest = (body: ImageEditRequest): ImageRequest => ({ images: body.n ?? 1, size: body.size, kind: "edit" });
  // Fetched once per request, whichever Gemini target the request reaches first; kept for the next on fallback.
  const inputs = new WeakMap<ImageEditRequest, Promise<NeutralImageRequest["images"]>>();
  const inputsOf = (body: ImageEditRequest, signal: UpstreamSignal) => {
    let images = inputs.get(body);
    if (!images) inputs.set(body, (images = geminiInputImages(body.images, deps.download, downloadSignal(signal))));
    return images;
  };
  return {
    route: "/v1/images/edits",
    clientProtocol: "openai",
    protocols: ["openai", "gemini"],
    kind: "image",
    read: readEditBody,
    parse: (raw) => validate(imageEditJsonSchema, raw),
    describe: (body) => describePrompt(body.model, body.prompt, body.stream === true),
    pricing: (model, key, config, byok, body) => imagePricing(imageRequest(body))(model, key, config, byok),
    admit: async (body, model) => admitFor(model, { gemini: () => geminiImageAsk(body) }),
    async call(adapter, target, body, options) {
      if (target.provider.protocol === "gemini") {
        if (!adapter.generateImages) throw new UpstreamError("connect", null);
        return adapter.generateImages(extended(geminiImageAsk(body), { images: await inputsOf(body, options.signal) }), options);
      }
      if (!adapter.imageEdits) throw new UpstreamError("connect", null);
      const upstream = toUpstreamEdit(body);
      upstream.model = target.upstreamModel;
      return adapter.imageEdits(upstream, options);
    },
    json: (answer, delivery) => deliverImages(deps, answer, delivery),
    async stream(opened, delivery) {
      const { meter, upstream } = delivery;
      const signal = abortSignalOf(upstream);
      const check = async (base64: string) =>
        void (await deliverImage({ b64_json: base64 }, "b64_json", { download: deps.download, signal }));
      await checkFirst(opened.first, check);
      const upstreamModel = meter.upstream!.upstreamModel;
      const designated = deps.config.media.images.native_usage_models;
      const protocol = imageEditRelay(check, convertResponsesUsage, (done) =>
        // A stream cut before any image completed still delivered partial images: billed as one image at least.
        imageUsageReport(done.tokens, done.usage, Math.max(done.images, 1), upstreamModel, designated),
      );
      return deliverRelayed(delivery, opened, protocol, null);
    },
  };
}

/** The metering path's errors, and a provider's refusal of the prompt (a Gemini target's). */
export const IMAGE_ERROR_CODES = [...METERED_ERROR_CODES, "content_policy_violation"] as const;

/** POST /v1/images/generations through the metering path. */
export const imageGenerationsRoute = route<InferenceDeps>(
  meteredOperation("Media", {
    method: "post",
    path: "/v1/images/generations",
    operationId: "createImage",
    errors: IMAGE_ERROR_CODES,
    summary: "Image generation",
    description:
      "Each image is delivered by the gateway: a `data:` URI (`url`, the default) or plain base64 (`b64_json`), typed by its bytes. " +
      "Invalid image data from the upstream is a 502 `upstream_invalid_output`, and no other target is tried.",
    body: ours("ImageGenerationRequest", imageGenerationSchema),
    ok: { status: 200, description: "The images.", schema: vendor("openai", "ImagesResponse"), charged: true },
  }),
  (deps) => meteredHandler(deps, generations(deps)),
);

/** POST /v1/images/edits, JSON or multipart, through the metering path. */
export const imageEditsRoute = route<InferenceDeps>(
  meteredOperation("Media", {
    method: "post",
    path: "/v1/images/edits",
    operationId: "createImageEdit",
    errors: IMAGE_ERROR_CODES,
    summary: "Image edits (JSON or multipart)",
    description: "Delivered as generations are, `b64_json` by default. With `stream: true`, the upstream's image events are relayed.",
    body: ours("ImageEditRequest", imageEditJsonSchema),
    form: ours("ImageEditForm", imageEditFormSchema),
    ok: {
      status: 200,
      description: "The images; with `stream: true`, the image edit events as server-sent events.",
      schema: vendor("openai", "ImagesResponse"),
      events: vendor("openai", "ImageEditStreamEvent"),
      charged: true,
    },
  }),
  (deps) => meteredHandler(deps, edits(deps)),
);
