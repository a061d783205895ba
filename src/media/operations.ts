import { METERED_ERROR_CODES, UPSTREAM_KEY_HEADER_NAME } from "../metering/metered-errors.js";
import { ours, vendor, type OperationDescription } from "../server/api-description.js";
import { embedQuerySchema } from "./embed-query.js";
import { embedTokenSchema, mintEmbedTokenSchema } from "./embed-token-route.js";
import { imageEditFormSchema, imageEditJsonSchema, imageGenerationSchema } from "./image-request-schema.js";

// The media routes in the API description: the request bodies are ours (the gateway's validation, with
// `response_format` handled locally and `image_config`); the answers are OpenAI's own ImagesResponse and image
// edit stream events, as the gateway delivers them.

const byok = { [UPSTREAM_KEY_HEADER_NAME]: "Your own key for the model's provider (bring-your-own key), used instead of the gateway's." };

const media = { access: "apiKey", tag: "Media", errors: METERED_ERROR_CODES, headers: byok } as const;

export const mediaOperations: OperationDescription[] = [
  Object.assign(
    {
      method: "post",
      path: "/v1/images/generations",
      operationId: "createImage",
      summary: "Image generation",
      description:
        "Each image is delivered by the gateway: a `data:` URI (`url`, the default) or plain base64 (`b64_json`), typed by its bytes. " +
        "Invalid image data from the upstream is a 502 `upstream_invalid_output`, and no other target is tried.",
      body: ours("ImageGenerationRequest", imageGenerationSchema),
      ok: { status: 200, description: "The images.", schema: vendor("openai", "ImagesResponse"), charged: true },
    } as const,
    media,
  ),
  Object.assign(
    {
      method: "post",
      path: "/v1/images/edits",
      operationId: "createImageEdit",
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
    } as const,
    media,
  ),
  {
    method: "get",
    path: "/embed/image:{model}",
    served: "/embed/:target{image:.+}",
    operationId: "getEmbeddedImage",
    summary: "One generated image as raw bytes, for `<img src>`",
    description:
      "Authenticated by an embed token in `token` (POST /v1/embed/tokens), or by the API key in a header; never a key in the URL. " +
      "Billed as one image generation; the same user's identical request is answered from the gateway's cache without a charge " +
      "(`ETag`; `If-None-Match` gives 304).",
    tag: "Media",
    access: "apiKey",
    pathParams: { model: "The public ID of an image model." },
    query: embedQuerySchema,
    headers: Object.assign({ "If-None-Match": "The ETag of an earlier answer: 304 while the cache still holds that image." }, byok),
    ok: {
      status: 200,
      description: "The image; `Content-Type` follows its bytes (PNG, JPEG, WebP or GIF).",
      contentType: "image/*",
      charged: true,
    },
    otherResponses: [{ status: 304, description: "The client's copy (If-None-Match) is the cached image: no body, no charge." }],
    errors: [...METERED_ERROR_CODES, "permission_denied"],
  },
  {
    method: "post",
    path: "/v1/embed/tokens",
    operationId: "createEmbedToken",
    summary: "Mint an embed token for GET /embed/image:{model}",
    description:
      "A short-lived token that speaks for this key on the embed route only, for one model, and with a prompt for that one image. " +
      "Revoking the key ends its tokens.",
    tag: "Media",
    access: "apiKey",
    body: ours("EmbedTokenRequest", mintEmbedTokenSchema),
    ok: { status: 201, description: "The token.", schema: ours("EmbedToken", embedTokenSchema) },
    errors: ["model_not_found", "model_not_supported", "model_not_allowed"],
  },
];
