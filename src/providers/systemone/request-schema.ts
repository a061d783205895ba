import { z } from "zod";
import { identifier } from "@model-gateway/worker-kit/wire/text";
import { jsonSchemaOf } from "../../openapi/json-schema.js";

// The evaluation request (spec "the service request"): `model`, one shared `state`, and a non-empty map of
// questions, each `noul`, `choice` or `score` with its criteria. Only these are checked; every other field
// (top level or in a question) is forwarded untouched. Maps are checked over the parsed value's own entries
// and never copied: zod's record and object parsers drop an own `__proto__` key, which is a valid question ID
// or option name.

/** A JSON document the evaluator reads as given: a string, an object, an array or null. */
type JsonDocument = string | Record<string, unknown> | unknown[] | null;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const isDocument = (v: unknown): v is JsonDocument => v === null || typeof v === "string" || typeof v === "object";

// The checks below are custom, which JSON Schema cannot carry: each says in `meta` what it checks, for the API
// description (GET /openapi.json).
const document = z
  .custom<JsonDocument>(isDocument, { error: "must be a string, an object, an array or null" })
  .meta({ type: ["string", "object", "array", "null"] });

/** A non-empty JSON object whose every value passes `item`; issues name the entry's key. */
function mapOf<T extends z.ZodType>(item: T, what: string, plural: string) {
  return z
    .custom<Record<string, z.output<T>>>(isObject, { error: `must be a map (JSON object) of ${plural}` })
    .superRefine((map, ctx) => {
      const entries = Object.entries(map);
      if (entries.length === 0) ctx.addIssue({ code: "custom", message: `must hold at least one ${what}` });
      for (const [key, value] of entries) {
        if (key.length === 0) ctx.addIssue({ code: "custom", message: `a ${what} name must not be empty`, path: [key] });
        const result = item.safeParse(value);
        if (!result.success) {
          for (const issue of result.error.issues) ctx.addIssue({ code: "custom", message: issue.message, path: [key, ...issue.path] });
        }
      }
    })
    .meta({ type: "object", minProperties: 1, propertyNames: { minLength: 1 }, additionalProperties: jsonSchemaOf(item, "input") });
}

const instructions = document.optional();

const noulQuestion = z.looseObject({
  type: z.literal("noul"),
  instructions,
  criteria: z
    .custom<Record<string, unknown> | null>((v) => v === null || isObject(v), {
      error: "must be an object describing true / false, or null",
    })
    .meta({ type: ["object", "null"] })
    .optional(),
});

const choiceQuestion = z.looseObject({
  type: z.literal("choice"),
  instructions,
  criteria: mapOf(document, "option", "option names to descriptions"),
});

const scoreQuestion = z.looseObject({
  type: z.literal("score"),
  instructions,
  criteria: z
    .array(document, { error: "must be an array of ordered level descriptions" })
    .min(2, { error: "must list at least two ordered level descriptions" }),
});

const questionTypes = ["noul", "choice", "score"] as const;

const question = z.discriminatedUnion("type", [noulQuestion, choiceQuestion, scoreQuestion], {
  error: (issue) =>
    issue.code === "invalid_union" ? `must be one of ${questionTypes.map((t) => `"${t}"`).join(", ")}` : "must be a question object",
});

export type Question = z.infer<typeof question>;

export const systemOneRequestSchema = z.looseObject(
  {
    model: identifier(),
    state: z
      .custom<JsonDocument>((v) => v !== undefined, { error: "is required (a string, an object, an array or null)" })
      .pipe(document)
      .meta({ type: ["string", "object", "array", "null"], description: "The one shared state every question is asked about." }),
    questions: mapOf(question, "question", "question IDs to questions"),
    stream: z
      .boolean({ error: "must be a boolean" })
      .optional()
      .refine((stream) => stream !== true, { error: "true is not supported: the evaluation service answers with one JSON object" }),
  },
  { error: "the body must be a JSON object" },
);

export type SystemOneRequest = z.infer<typeof systemOneRequestSchema>;
