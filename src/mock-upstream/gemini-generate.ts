import { Hono } from "hono";
import { z } from "zod";
import type { MockUpstreamEnv } from "./context.js";
import { gemini, parseBody } from "./dialects.js";
import { generateResponse, type Plan, streamChunks } from "./gemini-generate-output.js";
import { imagePlan, imageRequestProblem } from "./gemini-images.js";
import { chosenFunction, digestOf, promptTokens, replyOf, TOOL_ARGUMENTS, type ToolChoice, textOf, toolCallTokens } from "./mock-text.js";
import { playEvents } from "./sse.js";

/**
 * Gemini `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse` (the paths
 * `@google/genai` calls under its base URL), deterministic like the other routes: everything derives from
 * sha256 of the model, system instruction and contents (docs/mock-upstream.md). Field names are the proto3
 * JSON mapping of generative_service.proto (lowerCamelCase); the answer's shapes are in
 * ./gemini-generate-output.ts.
 */

/** The members of Part's `data` oneof: a part holds exactly one. */
const PART_DATA = ["text", "inlineData", "functionCall", "functionResponse", "fileData", "executableCode", "codeExecutionResult"];

const part = z.looseObject({ text: z.string().optional() }).refine((p) => PART_DATA.filter((field) => field in p).length === 1, {
  message: "required oneof field 'data' must have one initialized field",
});
const content = z.looseObject({ role: z.enum(["user", "model"]).optional(), parts: z.array(part).min(1) });

const generateRequest = z.object({
  contents: z.array(content).min(1),
  systemInstruction: content.optional(),
  generationConfig: z
    .looseObject({
      maxOutputTokens: z.number().int().min(1).optional(),
      candidateCount: z.number().int().min(1).optional(),
      responseModalities: z.array(z.enum(["MODALITY_UNSPECIFIED", "TEXT", "IMAGE", "AUDIO"])).optional(),
      imageConfig: z.looseObject({ aspectRatio: z.string().optional(), imageSize: z.string().optional() }).optional(),
    })
    .optional(),
  tools: z.array(z.looseObject({ functionDeclarations: z.array(z.looseObject({ name: z.string().min(1) })).optional() })).optional(),
  toolConfig: z
    .looseObject({
      functionCallingConfig: z
        .looseObject({ mode: z.string().optional(), allowedFunctionNames: z.array(z.string()).optional() })
        .optional(),
    })
    .optional(),
});
export type GenerateRequest = z.infer<typeof generateRequest>;

/** `NONE` calls nothing; `ANY` must call, the first allowed function when the list narrows them. */
function toolChoiceOf(config: NonNullable<GenerateRequest["toolConfig"]>["functionCallingConfig"]): ToolChoice {
  if (config?.mode === "NONE") return "none";
  if (config?.mode !== "ANY") return "auto";
  const allowed = config.allowedFunctionNames?.[0];
  return allowed === undefined ? "required" : { name: allowed };
}

function plan(model: string, req: GenerateRequest): Plan {
  const digest = digestOf([model, req.systemInstruction ?? null, req.contents]);
  const hex = digest.toString("hex");
  // Each content is a message whose content is its parts.
  const parts = req.contents.map((c) => c.parts);
  const prompt = promptTokens(req.systemInstruction ? [req.systemInstruction.parts, ...parts] : parts);
  const base = { model, responseId: hex.slice(0, 24), prompt };

  const functions = (req.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((d) => d.name));
  const last = req.contents.at(-1);
  const userText = last && last.role !== "model" ? textOf(last.parts) : undefined;
  const name = chosenFunction(functions, toolChoiceOf(req.toolConfig?.functionCallingConfig), userText);
  if (name !== undefined) {
    // Function calls are never cut by maxOutputTokens; Gemini reports them with finishReason STOP.
    const functionCall = { name, args: TOOL_ARGUMENTS };
    const output = toolCallTokens(name, JSON.stringify(TOOL_ARGUMENTS));
    return { ...base, parts: [{ functionCall }], output, finishReason: "STOP" };
  }
  const reply = replyOf(digest, req.generationConfig?.maxOutputTokens);
  const textParts = reply.pieces.map((text) => ({ text }));
  return { ...base, parts: textParts, output: reply.words, finishReason: reply.truncated ? "MAX_TOKENS" : "STOP" };
}

const METHODS = ["generateContent", "streamGenerateContent"];

// The method follows a colon in the last path segment (`models/mock-gemini:generateContent`), so the segment is
// one parameter split here.
export const geminiGenerateRoute = new Hono<MockUpstreamEnv>().post("/v1beta/models/:target", async (c) => {
  const target = c.req.param("target");
  const colon = target.lastIndexOf(":");
  const [model, method] = [target.slice(0, colon), target.slice(colon + 1)];
  if (colon <= 0 || !METHODS.includes(method)) return gemini.error(c, 404, `Method not found: ${c.req.method} ${c.req.path}`);
  const stream = method === "streamGenerateContent";
  if (stream && c.req.query("alt") !== "sse") {
    return gemini.error(c, 400, "The mock streams only with alt=sse (what @google/genai asks for).");
  }
  const req = await parseBody(c, gemini, generateRequest);
  if (req instanceof Response) return req;
  const faults = c.get("faults");
  const config = req.generationConfig ?? {};
  const modalities = config.responseModalities ?? [];
  let p: Plan;
  if (modalities.includes("IMAGE")) {
    const problem = imageRequestProblem(model, config);
    if (problem) return gemini.error(c, 400, problem);
    p = imagePlan({ model, contents: req.contents, modalities, imageSize: config.imageConfig?.imageSize }, faults.geminiImage);
  } else p = plan(model, req);
  const omitUsage = faults.omitUsage || faults.geminiImage === "no-usage";
  if (!stream) return c.json(generateResponse(p, omitUsage));
  return playEvents(c, streamChunks(p, { omitUsage, dropping: faults.dropAfter !== undefined }));
});
