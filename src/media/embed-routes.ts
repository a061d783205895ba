import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Context } from "hono";
import type { EmbedGrant } from "../auth/principals.js";
import { errors } from "../errors.js";
import { identifierProblem } from "@model-gateway/worker-kit/wire/text";
import { resolveModel } from "../catalog/model-access.js";
import { clientGone } from "../metering/client-disconnect.js";
import { withChargeHeaders } from "../metering/deliver.js";
import { checkedImage, ImageDeliveryError, type UpstreamImage } from "../providers/upstream-images/image-delivery.js";
import type { RowStart } from "../metering/request-row.js";
import { meteredHandler, type Delivery, type InferenceDeps, type RouteSpec } from "../metering/metered-handler.js";
import type { JsonResult } from "../providers/types.js";
import type { AppEnv } from "../server/context.js";
import { route } from "../server/route.js";
import { byokHeader } from "../metering/metered-operation.js";
import { embedQuerySchema } from "./embed-query.js";
import { requestLog, standardHeaders } from "../server/request-context.js";
import { cacheKey, paramsDigest, parseEmbedQuery, toGeneration } from "./embed-query.js";
import { abortSignalOf, imageUsageReport } from "./image-answer.js";
import type { ImageGenerationRequest } from "./image-request-schema.js";
import { generations, IMAGE_ERROR_CODES } from "./image-routes.js";
import type { CachedImage, MediaCache } from "./media-cache.js";

// GET /embed/image:{model} (docs/api.md, "Embeddable images"): one generated image as raw bytes, for `<img src>`.
// Billed as a generation on the one metering path; an identical request of the same user is answered from the
// cache shared by every process (media-cache.ts), or 304 when the client already holds it, without a charge.
// Identical requests arriving together are generated once: the first claims the entry, the others wait for it.

export interface EmbedDeps extends InferenceDeps {
  mediaCache: MediaCache;
}

/** The route as logged: never the URL, whose query holds the prompt and maybe a token. */
export const EMBED_ROUTE = "/embed/image:{model}";
const PREFIX = "image:";
/** How often a request waiting for an identical one's image looks for it. */
const POLL_MS = 200;

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** The entity tags of If-None-Match (weak or strong alike, as RFC 9110 compares them for GET). */
function entityTags(header: string | undefined): string[] {
  if (!header) return [];
  return header
    .split(",")
    .map((tag) => tag.trim().replace(/^W\//, ""))
    .filter((tag) => tag.length > 0);
}

/**
 * The headers of an image answer. `private`: it is this user's; `cross-origin` resource policy and CORS for
 * anyone, so that other sites' pages can show it (and draw it on a canvas): the credential is in the URL, not a
 * cookie, so nothing is exposed that the page did not already have.
 */
function imageHeaders(requestId: string, etag: string, maxAgeSeconds: number, contentType?: string): Record<string, string> {
  const headers = Object.assign(standardHeaders(requestId), {
    etag,
    "cache-control": `private, max-age=${Math.max(0, maxAgeSeconds)}`,
    "cross-origin-resource-policy": "cross-origin",
    "access-control-allow-origin": "*",
    vary: "Authorization",
  });
  if (contentType) headers["content-type"] = contentType;
  return headers;
}

function cachedAnswer(c: Context<AppEnv>, entry: CachedImage): Response {
  const maxAge = Math.floor((entry.expiresAt.getTime() - Date.now()) / 1000);
  if (!entry.bytes) return new Response(null, { status: 304, headers: imageHeaders(c.get("requestId"), entry.etag, maxAge) });
  return new Response(entry.bytes, { status: 200, headers: imageHeaders(c.get("requestId"), entry.etag, maxAge, entry.contentType) });
}

/** A token bound to a model (and maybe to one request) serves nothing else: 403. */
function checkGrant(grant: EmbedGrant | undefined, model: string, digest: string): void {
  if (!grant) return;
  if (grant.model !== model) throw errors.forbidden("This embed token was minted for another model.");
  if (grant.params !== null && grant.params !== digest) {
    throw errors.forbidden("This embed token was minted for other image parameters.");
  }
}

/** The one image of an answer as bytes, typed by what they are (delivery's own checks: 502 when not an image). */
async function imageBytes(deps: InferenceDeps, answer: JsonResult, delivery: Delivery<unknown>) {
  const data = answer.body.data;
  const first: unknown = Array.isArray(data) ? data[0] : undefined;
  if (typeof first !== "object" || first === null) throw new ImageDeliveryError("no_image");
  const { bytes, mime } = await checkedImage(first as UpstreamImage, { download: deps.download, signal: abortSignalOf(delivery.upstream) });
  return { contentType: mime, bytes };
}

/** The generation route's spec, reading the embed's request instead of a body, and answering bytes. */
function embedSpec(deps: EmbedDeps, request: ImageGenerationRequest, key: string): RouteSpec<ImageGenerationRequest> {
  return Object.assign(generations(deps), {
    route: EMBED_ROUTE,
    read: async () => ({ value: request, text: "" }),
    parse: () => request,
    async json(answer: JsonResult, delivery: Delivery<ImageGenerationRequest>): Promise<Response> {
      const { c, meter } = delivery;
      const image = await imageBytes(deps, answer, delivery);
      if (delivery.upstream.aborted || clientGone(c)) {
        // Nobody gets the image: it is neither charged nor kept.
        void meter.fail(errors.clientClosed());
        return c.body(null, 499 as never);
      }
      const designated = deps.config.media.images.native_usage_models;
      const usage = imageUsageReport(answer.usage, answer.body.usage, 1, meter.upstream!.upstreamModel, designated);
      const reported = answer.body.usage !== undefined && answer.body.usage !== null;
      meter.markFirstByte();
      // The image goes out once its charge is committed (docs/billing.md, "Settlement"); not committed in time, it
      // is neither delivered nor kept.
      const charge = await meter.settleBeforeAnswer(usage, reported ? "upstream" : "estimated");
      const etag = `"${sha256(image.bytes).slice(0, 32)}"`;
      const owner = c.get("apiKey").userId;
      await deps.mediaCache
        .store(key, owner, request.model, { bytes: image.bytes, contentType: image.contentType, etag })
        .catch((err: unknown) => {
          // The image is delivered and paid for either way; only a later identical request pays again.
          requestLog(c)?.warn({ err }, "EMBED_CACHE_STORE_FAILED");
          return deps.mediaCache.release(key).catch(() => {});
        });
      return new Response(image.bytes, {
        status: 200,
        headers: withChargeHeaders(imageHeaders(c.get("requestId"), etag, deps.mediaCache.ttlSeconds, image.contentType), charge),
      });
    },
  });
}

async function serveEmbed(deps: EmbedDeps, c: Context<AppEnv>): Promise<Response> {
  const key = c.get("apiKey");
  const requested = c.req.param("target")!.slice(PREFIX.length);
  // Checked before the row is written: the row never holds an unbounded or unstorable model.
  const problem = identifierProblem(requested);
  const modelId = problem === undefined ? requested : "";
  const start: RowStart = {
    requestId: c.get("requestId"),
    route: EMBED_ROUTE,
    clientProtocol: "openai",
    key,
    modelId,
    startedAt: performance.now(),
    streamed: false,
  };
  let request: ImageGenerationRequest;
  let entry: string;
  try {
    if (problem !== undefined) throw errors.badRequest(`Invalid model: ${problem}`, "model", "invalid_value");
    const params = parseEmbedQuery(c.req.queries());
    const digest = paramsDigest(modelId, params);
    checkGrant(c.get("embedGrant") as EmbedGrant | undefined, modelId, digest);
    // What the key may use now, before anything is served from the cache.
    resolveModel(deps.catalog, deps.config, key, modelId, "image");
    request = toGeneration(modelId, params);
    entry = cacheKey(key.userId, digest);
  } catch (err) {
    deps.metering.logRejected(start, err);
    throw err;
  }
  const tags = entityTags(c.req.header("if-none-match"));
  for (;;) {
    const hit = await deps.mediaCache.hit(entry, tags);
    if (hit) {
      deps.metering.logServed(start, hit.bytes ? 200 : 304);
      return cachedAnswer(c, hit);
    }
    if (await deps.mediaCache.claim(entry, key.userId, modelId)) break;
    if (clientGone(c)) {
      deps.metering.logRejected(start, errors.clientClosed());
      return c.body(null, 499 as never);
    }
    await sleep(POLL_MS);
  }
  try {
    const answer = await meteredHandler(deps, embedSpec(deps, request, entry))(c);
    if (answer.status !== 200) await deps.mediaCache.release(entry);
    return answer;
  } catch (err) {
    await deps.mediaCache.release(entry).catch(() => {});
    throw err;
  }
}

/** GET /embed/image:{model}; the model is the rest of the segment after `image:`. */
export const embedRoute = route<EmbedDeps>(
  {
    method: "get",
    path: EMBED_ROUTE,
    served: `/embed/:target{${PREFIX}.+}`,
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
    headers: Object.assign({ "If-None-Match": "The ETag of an earlier answer: 304 while the cache still holds that image." }, byokHeader),
    ok: {
      status: 200,
      description: "The image; `Content-Type` follows its bytes (PNG, JPEG, WebP or GIF).",
      contentType: "image/*",
      charged: true,
    },
    otherResponses: [{ status: 304, description: "The client's copy (If-None-Match) is the cached image: no body, no charge." }],
    errors: [...IMAGE_ERROR_CODES, "permission_denied"],
  },
  (deps) => (c) => serveEmbed(deps, c),
);
