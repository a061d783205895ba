import { z } from "zod";

/**
 * The Gemini answers the mock sends, as the proto3 JSON mapping of shared/reference/gemini
 * (generative_service.proto: GenerateContentResponse, Candidate, UsageMetadata; content.proto: Content, Part,
 * FunctionCall). Google publishes no JSON Schema for them here, so this transcribes the fields the mock uses;
 * strict objects make a misspelt or snake_case field fail.
 */

const FINISH_REASONS = [
  "FINISH_REASON_UNSPECIFIED",
  "STOP",
  "MAX_TOKENS",
  "SAFETY",
  "RECITATION",
  "LANGUAGE",
  "OTHER",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "MALFORMED_FUNCTION_CALL",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_OTHER",
  "NO_IMAGE",
  "IMAGE_RECITATION",
  "UNEXPECTED_TOOL_CALL",
  "TOO_MANY_TOOL_CALLS",
] as const;

const part = z.union([
  z.strictObject({ text: z.string() }),
  z.strictObject({ functionCall: z.strictObject({ name: z.string(), args: z.record(z.string(), z.unknown()) }) }),
]);
const int32 = z
  .number()
  .int()
  .min(0)
  .max(2 ** 31 - 1);

const generateContentResponse = z.strictObject({
  candidates: z.array(
    z.strictObject({
      content: z.strictObject({ parts: z.array(part).min(1), role: z.literal("model") }),
      finishReason: z.enum(FINISH_REASONS).optional(),
      index: int32,
    }),
  ),
  usageMetadata: z.strictObject({ promptTokenCount: int32, candidatesTokenCount: int32.optional(), totalTokenCount: int32 }).optional(),
  modelVersion: z.string(),
  responseId: z.string(),
});

/** google.rpc.Status as Google's JSON error envelope. */
const errorResponse = z.strictObject({
  error: z.strictObject({
    code: int32,
    message: z.string(),
    status: z.string().regex(/^[A-Z_]+$/),
    details: z.array(z.looseObject({ "@type": z.string() })).optional(),
  }),
});

const issues = (result: z.ZodSafeParseResult<unknown>) =>
  result.success ? [] : result.error.issues.map((i) => `${i.path.join(".") || "/"} ${i.message}`);

/** The problems of `value` as a GenerateContentResponse, [] when it is one. */
export const geminiResponseErrors = (value: unknown) => issues(generateContentResponse.safeParse(value));
/** The problems of `value` as Google's error envelope, [] when it is one. */
export const geminiErrorErrors = (value: unknown) => issues(errorResponse.safeParse(value));
