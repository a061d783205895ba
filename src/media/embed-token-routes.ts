import { z } from "zod";
import type { EmbedTokens } from "../auth/embed-tokens.js";
import type { Catalog } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import { errors } from "../errors.js";
import { resolveModel } from "../catalog/model-access.js";
import { readValidJson } from "../server/body.js";
import type { BodyCaps } from "../server/body-rules.js";
import { ours } from "../openapi/operation.js";
import { route } from "../server/route.js";
import { checkParams, embedParams, paramsDigest } from "./embed-query.js";

// POST /v1/embed/tokens (docs/api.md, "Embeddable images"): a key's owner mints the short-lived token a page puts
// in `<img src>` (spec General rule 5: never the key itself). With a prompt the token serves that one image only
// (the safe choice for a public page: whoever reads the page can fetch that image, nothing else); without, any
// prompt on the model until it expires.

export const mintEmbedTokenSchema = z.strictObject(
  {
    model: z.string({ error: "is required" }).min(1, { error: "must not be empty" }).max(128, { error: "must be at most 128 characters" }),
    ttl_seconds: z
      .int({ error: "must be an integer" })
      .min(1, { error: "must be at least 1" })
      .optional()
      .meta({ description: "The token's lifetime; `media.embed.token_ttl_seconds` by default, at most `token_max_ttl_seconds` (a day)." }),
    prompt: embedParams.prompt.optional().meta({ description: "Binds the token to this one image (with the other parameters given)." }),
    size: embedParams.size,
    aspect_ratio: embedParams.aspect_ratio,
    format: embedParams.format,
    quality: embedParams.quality,
  },
  { error: (issue) => (issue.code === "unrecognized_keys" ? `unknown field ${issue.keys.join(", ")}` : "the body must be a JSON object") },
);

export const embedTokenSchema = z.object({
  token: z.string().meta({ description: "Put it in the image URL as `token=`; it speaks for the key that minted it." }),
  expires_at: z.iso.datetime(),
  model: z.string(),
  url: z.string().optional().meta({ description: "For a bound token: the image's path and query, to append to the gateway's root URL." }),
});

const BINDING = ["size", "aspect_ratio", "format", "quality"] as const;

export interface EmbedTokenRouteDeps {
  config: Config;
  catalog: Catalog;
  embedTokens: EmbedTokens;
  bodies: BodyCaps;
}

export const embedTokenRoute = route<EmbedTokenRouteDeps>(
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
  (deps) => {
    const limits = deps.config.media.embed;
    return async (c) => {
      const body = await readValidJson(c, mintEmbedTokenSchema, deps.bodies.small);
      const key = c.get("apiKey");
      const ttl = body.ttl_seconds ?? limits.token_ttl_seconds;
      if (ttl > limits.token_max_ttl_seconds) {
        throw errors.badRequest(`Invalid ttl_seconds: must be at most ${limits.token_max_ttl_seconds}`, "ttl_seconds", "invalid_value");
      }
      const prompt = body.prompt;
      if (prompt === undefined) {
        const stray = BINDING.find((name) => body[name] !== undefined);
        if (stray)
          throw errors.badRequest(`Invalid ${stray}: a token is bound to image parameters only with a prompt`, "prompt", "invalid_value");
      }
      // A token for a model the key may not use would only ever answer 403.
      resolveModel(deps.catalog, deps.config, key, body.model, "image");
      const params = prompt === undefined ? null : checkParams(Object.assign({}, body, { prompt }));
      const digest = params && paramsDigest(body.model, params);
      const minted = await deps.embedTokens.mint(key.keyId, { model: body.model, params: digest }, new Date(Date.now() + ttl * 1000));
      const answer: z.infer<typeof embedTokenSchema> = {
        token: minted.token,
        expires_at: minted.expiresAt.toISOString(),
        model: body.model,
      };
      if (params) {
        const query = new URLSearchParams();
        for (const [name, value] of Object.entries(params)) query.set(name, value as string);
        query.set("token", minted.token);
        answer.url = `/embed/image:${encodeURIComponent(body.model)}?${query.toString()}`;
      }
      return c.json(answer, 201);
    };
  },
);
