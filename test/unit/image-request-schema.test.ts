import { describe, expect, it } from "vitest";
import { GatewayError } from "../../src/errors.js";
import { jsonSchemaOf } from "../../src/openapi/json-schema.js";
import { editFormToJson, imageEditJsonSchema, imageGenerationSchema } from "../../src/media/image-request-schema.js";
import { IMAGE_CONFIG_SUPPORT, toUpstreamGeneration } from "../../src/media/image-upstream-body.js";
import { validate } from "../../src/server/body.js";
import type { z } from "zod";

const generation = { model: "img-1", prompt: "a lighthouse at dusk" };
const edit = { model: "img-1", prompt: "add a boat", images: ["https://example.com/a.png"] };

/** The 400 `validate` throws for `body`, as status, param and code. */
function refusal(schema: z.ZodType, body: unknown) {
  try {
    validate(schema, body);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    const { status, param, code, message } = err as GatewayError;
    return { status, param, code, message };
  }
  throw new Error("accepted");
}

const expectRefused = (schema: z.ZodType, body: unknown, param: string) =>
  expect(refusal(schema, body)).toMatchObject({
    status: 400,
    param,
    code: "invalid_value",
    message: expect.stringContaining(`Invalid ${param}: `),
  });

const withField = (base: object, field: string, value: unknown) => Object.assign({}, base, { [field]: value });

// Fields both routes check alike: good values, then bad ones.
const commonFields: [string, unknown[], unknown[]][] = [
  ["model", ["img-1"], ["", 7, null]],
  ["prompt", ["x"], ["", ["x"], null]],
  ["n", [1, 10], [0, -1, 11, 1.5, "2", null]],
  ["size", ["1024x1024", "auto"], ["", 1024]],
  ["quality", ["high"], ["", 1]],
  ["background", ["auto", "opaque", "transparent"], ["white", ""]],
  ["output_format", ["png", "jpeg", "webp"], ["gif", "PNG"]],
  ["output_compression", [0, 50, 100], [-1, 101, 2.5, "50"]],
  ["moderation", ["auto", "low"], ["high"]],
  ["user", ["user-1", ""], [1]],
];

describe.each([
  ["imageGenerationSchema", imageGenerationSchema, generation],
  ["imageEditJsonSchema", imageEditJsonSchema, edit],
] as const)("%s", (_name, schema, base) => {
  it.each(commonFields)("%s: takes the good values, refuses the bad ones naming the field", (field, good, bad) => {
    for (const value of good) expect(validate(schema, withField(base, field, value))[field]).toEqual(value);
    for (const value of bad) expectRefused(schema, withField(base, field, value), field);
  });

  it("requires model and prompt", () => {
    expect(refusal(schema, { prompt: "x", images: ["a"] }).message).toBe("Invalid model: is required");
    expect(refusal(schema, { model: "m", images: ["a"] }).message).toBe("Invalid prompt: is required");
  });

  it("refuses a body that is not an object", () => {
    expect(refusal(schema, [])).toMatchObject({ status: 400, param: null, message: "the body must be a JSON object" });
  });

  it("passes unknown fields through", () => {
    expect(validate(schema, withField(base, "vendor_option", { a: 1 })).vendor_option).toEqual({ a: 1 });
  });

  it("has an API description", () => {
    expect(jsonSchemaOf(schema, "input")).toMatchObject({ type: "object", required: expect.arrayContaining(["model", "prompt"]) });
  });
});

describe("imageGenerationSchema", () => {
  it("defaults response_format to url and takes b64_json", () => {
    expect(validate(imageGenerationSchema, generation).response_format).toBe("url");
    expect(validate(imageGenerationSchema, withField(generation, "response_format", "b64_json")).response_format).toBe("b64_json");
    expectRefused(imageGenerationSchema, withField(generation, "response_format", "png"), "response_format");
  });

  it("checks style and image_config", () => {
    expect(validate(imageGenerationSchema, withField(generation, "style", "vivid")).style).toBe("vivid");
    expectRefused(imageGenerationSchema, withField(generation, "style", 3), "style");
    const config = { aspect_ratio: "21:9", image_size: "4K" };
    expect(validate(imageGenerationSchema, withField(generation, "image_config", config)).image_config).toEqual(config);
    expectRefused(imageGenerationSchema, withField(generation, "image_config", "16:9"), "image_config");
    for (const ratio of ["16x9", "0:1", "16:", 16, "1:2:3"]) {
      expectRefused(imageGenerationSchema, withField(generation, "image_config", { aspect_ratio: ratio }), "image_config.aspect_ratio");
    }
    expectRefused(imageGenerationSchema, withField(generation, "image_config", { image_size: "" }), "image_config.image_size");
    // A misspelt key would otherwise be silently lost: image_config is never forwarded as sent.
    expect(refusal(imageGenerationSchema, withField(generation, "image_config", { aspectRatio: "1:1" }))).toMatchObject({
      status: 400,
      param: "image_config",
      message: "Invalid image_config: unknown key aspectRatio: only aspect_ratio and image_size are taken",
    });
  });
});

describe("imageEditJsonSchema", () => {
  it("defaults response_format to b64_json", () => {
    expect(validate(imageEditJsonSchema, edit).response_format).toBe("b64_json");
    expect(validate(imageEditJsonSchema, withField(edit, "response_format", "url")).response_format).toBe("url");
  });

  it("takes each form of input image", () => {
    const images = [
      "data:image/png;base64,AAAA",
      { image_url: "https://example.com/b.png" },
      { image_url: { url: "https://example.com/c.png" } },
    ];
    expect(validate(imageEditJsonSchema, withField(edit, "images", images)).images).toEqual(images);
  });

  it.each([
    [[""], "images[0]"],
    [[7], "images[0]"],
    [["a", { url: "x" }], "images[1]"],
    [[{ image_url: 7 }], "images[0]"],
    [[{ image_url: "" }], "images[0].image_url"],
    [[{ image_url: { href: "x" } }], "images[0]"],
    [[{ image_url: { url: "" } }], "images[0].image_url.url"],
    [[], "images"],
    ["a.png", "images"],
    [Array.from({ length: 17 }, () => "a"), "images"],
  ])("refuses images %j naming %s", (images, param) => {
    expectRefused(imageEditJsonSchema, withField(edit, "images", images), param);
  });

  it("requires images", () => {
    expect(refusal(imageEditJsonSchema, generation)).toMatchObject({ param: "images", message: "Invalid images: is required" });
  });

  it.each([
    ["input_fidelity", ["high"], ["", 1]],
    ["partial_images", [0, 3], [-1, 1.5, "1"]],
    ["stream", [true, false], ["true", 1, null]],
  ] as [string, unknown[], unknown[]][])("%s: takes the good values, refuses the bad ones", (field, good, bad) => {
    for (const value of good) expect(validate(imageEditJsonSchema, withField(edit, field, value))[field]).toEqual(value);
    for (const value of bad) expectRefused(imageEditJsonSchema, withField(edit, field, value), field);
  });
});

describe("toUpstreamGeneration", () => {
  const upstream = (body: object, protocol: keyof typeof IMAGE_CONFIG_SUPPORT) =>
    toUpstreamGeneration(validate(imageGenerationSchema, body), IMAGE_CONFIG_SUPPORT[protocol]);

  it("keeps the client's fields, output_compression 0 included, and never sends response_format or user", () => {
    const body = Object.assign({}, generation, {
      n: 2,
      output_compression: 0,
      output_format: "jpeg",
      user: "u1",
      response_format: "b64_json",
      seed: 7,
    });
    for (const protocol of ["openai", "gemini"] as const) {
      expect(upstream(body, protocol).body).toEqual({
        model: "img-1",
        prompt: generation.prompt,
        n: 2,
        output_compression: 0,
        output_format: "jpeg",
        seed: 7,
      });
    }
    expect(upstream(generation, "openai").body).not.toHaveProperty("response_format");
  });

  it.each([
    ["1:1", "1024x1024"],
    ["16:9", "1536x1024"],
    ["21:9", "1536x1024"],
    ["4:3", "1536x1024"],
    ["5:4", "1536x1024"],
    ["9:16", "1024x1536"],
    ["3:4", "1024x1536"],
    ["4:5", "1024x1536"],
  ])("openai: aspect_ratio %s becomes size %s when size is absent", (ratio, size) => {
    const result = upstream(withField(generation, "image_config", { aspect_ratio: ratio }), "openai");
    expect(result).toEqual({ body: Object.assign({}, generation, { size }), imageConfig: undefined });
  });

  it("openai: the client's size wins over aspect_ratio, which is dropped", () => {
    const body = Object.assign({}, generation, { size: "auto", image_config: { aspect_ratio: "16:9" } });
    expect(upstream(body, "openai").body).toEqual(Object.assign({}, generation, { size: "auto" }));
  });

  it("openai: image_size 1K is dropped, any other is refused naming it", () => {
    expect(upstream(withField(generation, "image_config", { image_size: "1K" }), "openai").body).toEqual(generation);
    for (const imageSize of ["2K", "4K"]) {
      expect(() => upstream(withField(generation, "image_config", { aspect_ratio: "1:1", image_size: imageSize }), "openai")).toThrow(
        expect.objectContaining({ status: 400, param: "image_config.image_size", code: "invalid_value" }),
      );
    }
  });

  it("gemini: hands the neutral values to the adapter and leaves size alone", () => {
    const config = { aspect_ratio: "16:9", image_size: "2K" };
    expect(upstream(withField(generation, "image_config", config), "gemini")).toEqual({ body: generation, imageConfig: config });
    expect(upstream(generation, "gemini").imageConfig).toBeUndefined();
  });
});

describe("editFormToJson", () => {
  it("turns numbers and booleans into their JSON types, leaves the file fields out", () => {
    const fields = {
      model: "img-1",
      prompt: "p",
      n: "2",
      output_compression: "0",
      partial_images: "1",
      stream: "false",
      size: "1024x1024",
      image: "x",
      "image[]": ["y", "z"],
      mask: "m",
    };
    const body = editFormToJson(fields);
    expect(body).toEqual({ model: "img-1", prompt: "p", n: 2, output_compression: 0, partial_images: 1, stream: false, size: "1024x1024" });
    expect(editFormToJson({ stream: "true" }).stream).toBe(true);
    expect(validate(imageEditJsonSchema, Object.assign(body, { images: ["data:image/png;base64,AAAA"] }))).toMatchObject({
      n: 2,
      stream: false,
    });
  });

  it.each([
    ["n", "two"],
    ["n", "1.5"],
    ["n", ""],
    ["n", "0x2"],
    ["n", "0"],
    ["n", "11"],
    ["output_compression", "1e2"],
    ["output_compression", "-1"],
    ["partial_images", "NaN"],
    ["stream", "yes"],
    ["stream", "TRUE"],
    ["stream", "1"],
    ["background", "white"],
  ])("%s %j fails validation naming the field", (field, value) => {
    const body = Object.assign(editFormToJson({ model: "img-1", prompt: "p", [field]: value }), { images: ["a"] });
    expectRefused(imageEditJsonSchema, body, field);
  });

  it("a field sent twice is refused naming it", () => {
    const body = Object.assign(editFormToJson({ model: "img-1", prompt: "p", n: ["1", "2"] }), { images: ["a"] });
    expectRefused(imageEditJsonSchema, body, "n");
  });
});
