import type { ProviderConfig } from "../config/schema.js";
import { errors } from "../errors.js";
import { openaiOneVideo, openaiPrompt, openaiReference, openaiSeconds, openaiSize } from "./video-openai-fields.js";
import type { VideoRequest } from "./video-request-schema.js";

// How the unified video fields reach each provider protocol (docs/api.md, "Video", the capability table). A
// field is passed (under the provider's own name), mapped (into the provider's own fields and shapes, by a
// function that reads the whole request and may refuse a value with a 400 naming the field), dropped (the
// provider has no such setting; the request still runs) or refused (400 naming it: the request cannot be
// honoured without it). `provider_options` is merged last into the upstream body, but can never replace the
// model or the prompt the gateway sends.

type Field = Exclude<keyof VideoRequest, "model" | "provider_options">;

/** The upstream fields a mapped field becomes; `seconds` is the duration held (the model's default filled in). */
type Mapping = (request: VideoRequest, seconds: number) => Record<string, unknown>;

type Handling = { pass: string } | { map: Mapping } | "drop" | "refuse";

export type VideoCapabilities = Record<Field, Handling>;

const same = <F extends string>(name: F) => ({ pass: name });

/** The `video` protocol (ours, docs/mock-upstream.md): every unified field under its own name. */
const videoProtocol: VideoCapabilities = {
  prompt: same("prompt"),
  duration: same("duration"),
  resolution: same("resolution"),
  aspect_ratio: same("aspect_ratio"),
  input_image: same("input_image"),
  image_url: same("image_url"),
  input_video: same("input_video"),
  video_url: same("video_url"),
  input_audio: same("input_audio"),
  audio_url: same("audio_url"),
  n: same("n"),
  audio: same("audio"),
  sound: same("sound"),
  tier: same("tier"),
  quality: same("quality"),
  mode: same("mode"),
  voice_list: same("voice_list"),
};

/**
 * OpenAI's video API (`CreateVideoJsonBody`, ./video-openai-fields.ts): one video per job, of 4, 8 or 12
 * seconds, at one of four sizes, with at most one reference image; no video or audio inputs, no voices.
 */
const openaiProtocol: VideoCapabilities = {
  prompt: { map: openaiPrompt },
  duration: { map: openaiSeconds },
  resolution: { map: openaiSize },
  aspect_ratio: { map: openaiSize },
  input_image: { map: openaiReference },
  image_url: { map: openaiReference },
  input_video: "refuse",
  video_url: "refuse",
  input_audio: "refuse",
  audio_url: "refuse",
  n: { map: openaiOneVideo },
  // Sora makes its own soundtrack, and its model (sora-2, sora-2-pro) is the operator's choice, not a request's.
  audio: "drop",
  sound: "drop",
  tier: "drop",
  quality: "drop",
  mode: "drop",
  voice_list: "refuse",
};

/** The protocols that serve video, each with its table; a model on another protocol is not served here. */
export const VIDEO_CAPABILITIES: Partial<Record<ProviderConfig["protocol"], VideoCapabilities>> = {
  video: videoProtocol,
  openai: openaiProtocol,
};

export const VIDEO_PROTOCOLS = Object.keys(VIDEO_CAPABILITIES) as ProviderConfig["protocol"][];

/** Fields the gateway sets itself: provider_options cannot replace them. */
const RESERVED = new Set(["model", "prompt"]);

/**
 * The upstream body for one target: the mapped fields, the duration the hold was priced on (`seconds`, so the
 * provider is asked for what was held), then provider_options, with the target's upstream model.
 */
export function videoUpstreamBody(
  request: VideoRequest,
  capabilities: VideoCapabilities,
  upstreamModel: string,
  seconds: number,
): Record<string, unknown> {
  const body: Record<string, unknown> = Object.create(null);
  body.model = upstreamModel;
  for (const [field, handling] of Object.entries(capabilities) as [Field, Handling][]) {
    const value = field === "duration" ? seconds : request[field];
    if (value === undefined || handling === "drop") continue;
    if (handling === "refuse") {
      throw errors.badRequest(`Invalid ${field}: this model's provider does not support it.`, field, "invalid_value");
    }
    if ("map" in handling) Object.assign(body, handling.map(request, seconds));
    else body[handling.pass] = value;
  }
  for (const [name, value] of Object.entries(request.provider_options ?? {})) {
    if (RESERVED.has(name)) {
      throw errors.badRequest(
        `Invalid provider_options.${name}: the gateway sets ${name} itself.`,
        `provider_options.${name}`,
        "invalid_value",
      );
    }
    body[name] = value;
  }
  return body;
}
