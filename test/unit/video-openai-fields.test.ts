import { describe, expect, it } from "vitest";
import { GatewayError } from "../../src/errors.js";
import { VIDEO_CAPABILITIES, videoUpstreamBody } from "../../src/media/video-capabilities.js";
import { parseVideoRequest } from "../../src/media/video-routes.js";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { validateOpenAI } from "../helpers/openapi.js";

// The `openai` row of the video capability table (docs/api.md, "Video"): the unified fields as OpenAI's
// `CreateVideoJsonBody`, every body it builds valid against the reference, every value it cannot honour a 400
// naming the client's field.

const openai = VIDEO_CAPABILITIES.openai!;
const base = { model: "v", prompt: "a cat" };

/** The upstream body for `fields` on top of a minimal request, at the duration held (`seconds`). */
const bodyOf = (fields: Record<string, unknown>, seconds = 4) =>
  videoUpstreamBody(parseVideoRequest({ ...base, ...fields }), openai, "sora-2", seconds);

function refusal(fields: Record<string, unknown>, seconds = 4): { param: string | null; message: string; code: string } {
  try {
    bodyOf(fields, seconds);
  } catch (err) {
    if (err instanceof GatewayError) return { param: err.param, message: err.message, code: err.code };
    throw err;
  }
  throw new Error("accepted");
}

const png = MOCK_IMAGES.png.toString("base64");

describe("the openai video capabilities", () => {
  it("sends the prompt, the model and the duration held as `seconds`, nothing else by default", () => {
    const body = bodyOf({}, 8);
    expect({ ...body }).toEqual({ model: "sora-2", prompt: "a cat", seconds: "8" });
    expect(validateOpenAI("CreateVideoJsonBody", body)).toEqual([]);
  });

  it.each([
    [{ resolution: "720p" }, "720x1280"],
    [{ aspect_ratio: "16:9" }, "1280x720"],
    [{ aspect_ratio: "9:16" }, "720x1280"],
    [{ resolution: "720p", aspect_ratio: "16:9" }, "1280x720"],
    [{ resolution: "1024p", aspect_ratio: "16:9" }, "1792x1024"],
    [{ resolution: "1024p" }, "1024x1792"],
    [{ resolution: "1792x1024" }, "1792x1024"],
    [{ resolution: "720x1280", aspect_ratio: "9:16" }, "720x1280"],
  ])("maps %j to the size %s", (fields, size) => {
    const body = bodyOf(fields);
    expect(body.size).toBe(size);
    expect(validateOpenAI("CreateVideoJsonBody", body)).toEqual([]);
  });

  it.each([
    [{ image_url: "https://example.test/cat.png" }, "https://example.test/cat.png"],
    [{ input_image: "data:image/png;base64,AAAA" }, "data:image/png;base64,AAAA"],
    [{ input_image: png }, `data:image/png;base64,${png}`],
    [{ input_image: MOCK_IMAGES.webp.toString("base64") }, `data:image/webp;base64,${MOCK_IMAGES.webp.toString("base64")}`],
    [{ prompt: { text: "a cat", image: "https://example.test/cat.png" } }, "https://example.test/cat.png"],
  ])("makes %j the reference image", (fields, url) => {
    const body = bodyOf(fields);
    expect(body.input_reference).toEqual({ image_url: url });
    expect(body.prompt).toBe("a cat");
    expect(validateOpenAI("CreateVideoJsonBody", body)).toEqual([]);
  });

  it("drops the hints OpenAI has no setting for, and takes n = 1", () => {
    const body = bodyOf({ audio: true, sound: "on", tier: "pro", quality: "high", mode: "fast", n: 1 });
    expect(Object.keys(body).sort()).toEqual(["model", "prompt", "seconds"]);
  });

  it("merges provider_options last, never over the model or the prompt", () => {
    const body = bodyOf({ provider_options: { input_reference: { file_id: "file-123" } } });
    expect(body.input_reference).toEqual({ file_id: "file-123" });
    expect(refusal({ provider_options: { prompt: "other" } }).param).toBe("provider_options.prompt");
  });

  it.each([
    [{}, 5, "duration"],
    [{}, 10, "duration"],
    [{ n: 2 }, 4, "n"],
    [{ resolution: "1080p" }, 4, "resolution"],
    [{ resolution: "1280x720", aspect_ratio: "9:16" }, 4, "aspect_ratio"],
    [{ aspect_ratio: "1:1" }, 4, "aspect_ratio"],
    [{ input_video: "v" }, 4, "input_video"],
    [{ video_url: "https://example.test/a.mp4" }, 4, "video_url"],
    [{ input_audio: "a" }, 4, "input_audio"],
    [{ audio_url: "https://example.test/a.mp3" }, 4, "audio_url"],
    [{ voice_list: [{ voice_id: "v" }] }, 4, "voice_list"],
    [{ input_image: "not an image" }, 4, "input_image"],
    [{ input_image: Buffer.from("plain text, not a picture").toString("base64") }, 4, "input_image"],
    [{ image_url: "ftp://example.test/a.png" }, 4, "image_url"],
    [{ input_image: png, image_url: "https://example.test/a.png" }, 4, "image_url"],
    [{ prompt: { text: "a cat", image: "https://example.test/a.png" }, input_image: png }, 4, "input_image"],
    [{ prompt: "x".repeat(32_001) }, 4, "prompt"],
  ])("refuses %j at %i seconds naming %s", (fields, seconds, param) => {
    const r = refusal(fields, seconds);
    expect(r).toMatchObject({ param, code: "invalid_value" });
    expect(r.message).toContain(param);
  });

  it("names the allowed values in its refusals", () => {
    expect(refusal({}, 5).message).toContain("4, 8, 12 seconds");
    expect(refusal({ resolution: "1080p" }).message).toContain('"720p", "1024p"');
    expect(refusal({ aspect_ratio: "4:3" }).message).toContain('"16:9", "9:16"');
  });
});
