import { describe, expect, it } from "vitest";
import { GatewayError } from "../../src/errors.js";
import { VIDEO_CAPABILITIES, videoUpstreamBody } from "../../src/media/video-capabilities.js";
import { parseVideoRequest } from "../../src/media/video-routes.js";

// The unified video request (spec "Video generation request"): every field's refusal names it, and the
// `video` protocol's capability table passes every field through, provider_options merged last.

const base = { model: "v", prompt: "a cat" };

function refusal(body: unknown): { param: string | null; message: string } {
  try {
    parseVideoRequest(body);
  } catch (err) {
    if (err instanceof GatewayError) return { param: err.param, message: err.message };
    throw err;
  }
  throw new Error("accepted");
}

describe("video request validation", () => {
  it.each([
    [{ prompt: "x" }, "model"],
    [{ model: "v" }, "prompt"],
    [{ model: "v", prompt: 3 }, "prompt"],
    [{ model: "v", prompt: { text: "x" } }, "prompt"],
    [{ ...base, duration: 0 }, "duration"],
    [{ ...base, duration: "5" }, "duration"],
    [{ ...base, duration: 601 }, "duration"],
    [{ ...base, n: 0 }, "n"],
    [{ ...base, n: 1.5 }, "n"],
    [{ ...base, n: 5 }, "n"],
    [{ ...base, sound: "loud" }, "sound"],
    [{ ...base, tier: "8k" }, "tier"],
    [{ ...base, audio: "yes" }, "audio"],
    [{ ...base, resolution: 720 }, "resolution"],
    [{ ...base, aspect_ratio: "" }, "aspect_ratio"],
    [{ ...base, input_image: 1 }, "input_image"],
    [{ ...base, image_url: {} }, "image_url"],
    [{ ...base, input_video: [] }, "input_video"],
    [{ ...base, video_url: 2 }, "video_url"],
    [{ ...base, input_audio: true }, "input_audio"],
    [{ ...base, audio_url: null }, "audio_url"],
    [{ ...base, quality: 1 }, "quality"],
    [{ ...base, mode: false }, "mode"],
    [{ ...base, voice_list: [{ voice_id: "a" }, { voice_id: "b" }, { voice_id: "c" }] }, "voice_list"],
    [{ ...base, voice_list: [{ name: "a" }] }, "voice_list[0].voice_id"],
    [{ ...base, voice_list: [{ voice_id: 7 }] }, "voice_list[0].voice_id"],
    [{ ...base, voice_list: "a" }, "voice_list"],
    [{ ...base, provider_options: [] }, "provider_options"],
    [{ ...base, seed: 1 }, "seed"],
  ])("%j is refused naming %s", (body, param) => {
    const r = refusal(body);
    expect(r.param).toBe(param);
    expect(r.message).toContain(param);
  });

  it("accepts every field in its documented form", () => {
    const request = parseVideoRequest({
      model: "v",
      prompt: { text: "a cat", image: "https://example.test/cat.png" },
      duration: 7.5,
      resolution: "720p",
      aspect_ratio: "16:9",
      input_image: "data:image/png;base64,AA==",
      image_url: "https://example.test/a.png",
      input_video: "v",
      video_url: "https://example.test/a.mp4",
      input_audio: "a",
      audio_url: "https://example.test/a.mp3",
      n: 4,
      audio: true,
      sound: "off",
      tier: "4k",
      quality: "high",
      mode: "fast",
      voice_list: [{ voice_id: "v1", speed: 1.2 }, { voice_id: "v2" }],
      provider_options: { seed: 42 },
    });
    expect(request.voice_list).toEqual([{ voice_id: "v1", speed: 1.2 }, { voice_id: "v2" }]);
  });
});

describe("video capability mapping (the video protocol)", () => {
  const table = VIDEO_CAPABILITIES.video!;

  it("passes every unified field, the held duration and the upstream model; provider_options last", () => {
    const request = parseVideoRequest({
      ...base,
      sound: "on",
      voice_list: [{ voice_id: "v" }],
      provider_options: { seed: 1, sound: "off" },
    });
    expect({ ...videoUpstreamBody(request, table, "up-model", 5) }).toEqual({
      model: "up-model",
      prompt: "a cat",
      duration: 5,
      sound: "off",
      voice_list: [{ voice_id: "v" }],
      seed: 1,
    });
  });

  it("never lets provider_options replace the model or the prompt", () => {
    for (const name of ["model", "prompt"]) {
      const request = parseVideoRequest({ ...base, provider_options: { [name]: "x" } });
      expect(() => videoUpstreamBody(request, table, "up", 5)).toThrow(expect.objectContaining({ param: `provider_options.${name}` }));
    }
  });

  it("drops or refuses a field as the table says", () => {
    const limited = { ...table, tier: "drop", mode: "refuse" } as typeof table;
    const body = videoUpstreamBody(parseVideoRequest({ ...base, tier: "pro" }), limited, "up", 5);
    expect(body).not.toHaveProperty("tier");
    expect(() => videoUpstreamBody(parseVideoRequest({ ...base, mode: "fast" }), limited, "up", 5)).toThrow(
      expect.objectContaining({ param: "mode" }),
    );
  });
});
