import { createHash } from "node:crypto";
import { Hono } from "hono";
import { z } from "zod";
import type { MockUpstreamEnv } from "./context.js";
import { openai, parseBody } from "./dialects.js";
import { charTokens, digestOf } from "./mock-text.js";

/**
 * OpenAI `POST /v1/embeddings`, deterministic: each vector derives from sha256 of the model and that input
 * alone, so an input gets the same vector whatever it is batched with (docs/mock-upstream.md).
 */

const DEFAULT_DIMENSIONS = 16;
/** Above text-embedding-3-large's 3072, so any real `dimensions` passes, while a typo cannot ask for gigabytes. */
const MAX_DIMENSIONS = 4096;
const MAX_INPUTS = 2048;

/** One input: a string, or a token array as OpenAI also accepts. */
type Input = string | number[];

const isToken = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;

/** What every item must be, by the kind of the first item. */
const ITEM_RULES: { first: (v: unknown) => boolean; each: (v: unknown) => boolean; expected: string }[] = [
  { first: (v) => typeof v === "string", each: (v) => typeof v === "string" && v !== "", expected: "a non-empty string" },
  { first: (v) => typeof v === "number", each: isToken, expected: "a non-negative integer token" },
  {
    first: Array.isArray,
    each: (v) => Array.isArray(v) && v.length > 0 && v.every(isToken),
    expected: "a non-empty array of non-negative integer tokens",
  },
];

/**
 * OpenAI's four input forms (a string, strings, one token array, token arrays) as a list of inputs, or the
 * first problem with the path that names it.
 */
function inputsOf(input: unknown): Input[] | { path: number[]; message: string } {
  if (typeof input === "string") return input ? [input] : { path: [], message: "must not be an empty string" };
  if (!Array.isArray(input)) return { path: [], message: "must be a string, an array of strings, or token arrays" };
  if (input.length === 0 || input.length > MAX_INPUTS) return { path: [], message: `must hold 1 to ${MAX_INPUTS} items` };
  const rule = ITEM_RULES.find((r) => r.first(input[0]));
  const bad = rule ? input.findIndex((item) => !rule.each(item)) : 0;
  if (bad !== -1) return { path: [bad], message: `must be ${rule?.expected ?? "a string, a token or a token array"}` };
  // A flat array of integers is one token array; any other array is a list of inputs.
  return typeof input[0] === "number" ? [input as number[]] : (input as Input[]);
}

const embeddingsRequest = z.object({
  model: z.string().min(1),
  input: z.unknown().transform((input, ctx) => {
    const inputs = inputsOf(input);
    if (Array.isArray(inputs)) return inputs;
    ctx.addIssue({ code: "custom", ...inputs });
    return z.NEVER;
  }),
  encoding_format: z.enum(["float", "base64"]).nullish(),
  dimensions: z.number().int().min(1).max(MAX_DIMENSIONS).nullish(),
});

/**
 * A unit vector (up to float32 rounding) from the digest's counter-mode stream. Component i does not depend on
 * the length, so a shorter `dimensions` gives the renormalised prefix of a longer one, as OpenAI's do.
 */
function vectorOf(model: string, input: Input, dimensions: number): number[] {
  const seed = digestOf([model, input]);
  const raw: number[] = [];
  for (let block = 0; raw.length < dimensions; block++) {
    const bytes = createHash("sha256").update(seed).update(String(block)).digest();
    for (let i = 0; i < bytes.length && raw.length < dimensions; i += 4) raw.push(bytes.readUInt32LE(i) / 2 ** 31 - 1);
  }
  const norm = Math.hypot(...raw);
  // float32 values, so the float answer and the decoded base64 answer are the very same numbers.
  return raw.map((x) => Math.fround(x / norm));
}

/** OpenAI's base64 form: the little-endian float32 bytes of the vector. */
function base64Of(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((x, i) => bytes.writeFloatLE(x, i * 4));
  return bytes.toString("base64");
}

export const openaiEmbeddingsRoute = new Hono<MockUpstreamEnv>().post("/v1/embeddings", async (c) => {
  const req = await parseBody(c, openai, embeddingsRequest);
  if (req instanceof Response) return req;
  const { omitUsage, noBase64 } = c.get("faults");
  const base64 = req.encoding_format === "base64" && !noBase64;
  const data = req.input.map((input, index) => {
    const vector = vectorOf(req.model, input, req.dimensions ?? DEFAULT_DIMENSIONS);
    return { object: "embedding", index, embedding: base64 ? base64Of(vector) : vector };
  });
  // A string costs the prompt rule's 4 characters per token; a token array costs its tokens.
  const tokens = req.input.reduce((sum, input) => sum + (typeof input === "string" ? charTokens(input.length) : input.length), 0);
  const usage = { prompt_tokens: tokens, total_tokens: tokens };
  return c.json({ object: "list", data, model: req.model, ...(omitUsage ? {} : { usage }) });
});
