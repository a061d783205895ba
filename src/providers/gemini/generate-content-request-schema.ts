import { z } from "zod";
import { protoMessage, repeated } from "../schema-helpers.js";

// The Gemini GenerateContentRequest as the gateway accepts it (reference: generative_service.proto and
// content.proto of google.ai.generativelanguage.v1beta). The model is the URL's, so the body needs only
// `contents`. Field names may be camelCase or snake_case, as with Google's own parsers; errors name the
// camelCase field. Unknown fields and part kinds pass unchanged.

const struct = z.record(z.string(), z.unknown());

const part = protoMessage({
  text: z.string().optional(),
  inlineData: protoMessage({ mimeType: z.string().min(1), data: z.string() }).optional(),
  fileData: protoMessage({ mimeType: z.string().optional(), fileUri: z.string().min(1) }).optional(),
  functionCall: protoMessage({ id: z.string().optional(), name: z.string().min(1), args: struct.optional() }).optional(),
  functionResponse: protoMessage({ id: z.string().optional(), name: z.string().min(1), response: struct }).optional(),
  thought: z.boolean().optional(),
});

const content = protoMessage({
  // Older clients send function responses in a "function" turn; it is read as a user turn.
  role: z.enum(["user", "model", "function"]).optional(),
  parts: repeated(part, 1),
});

const functionDeclaration = protoMessage({
  name: z.string().min(1),
  description: z.string().optional(),
  parameters: struct.optional(),
  parametersJsonSchema: struct.optional(),
});

const generationConfig = protoMessage({
  stopSequences: z.array(z.string()).optional(),
  candidateCount: z.int().min(1).optional(),
  maxOutputTokens: z.int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().min(0).max(1).optional(),
  topK: z.int().nonnegative().optional(),
  seed: z.int().optional(),
  presencePenalty: z.number().optional(),
  frequencyPenalty: z.number().optional(),
  responseMimeType: z.string().optional(),
  responseSchema: struct.optional(),
  responseJsonSchema: struct.optional(),
});

const toolConfig = protoMessage({
  functionCallingConfig: protoMessage({
    mode: z.enum(["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"]).optional(),
    allowedFunctionNames: z.array(z.string()).optional(),
  }).optional(),
});

export const geminiGenerateContentRequestSchema = protoMessage({
  contents: repeated(content, 1),
  systemInstruction: content.optional(),
  tools: repeated(protoMessage({ functionDeclarations: repeated(functionDeclaration).optional() })).optional(),
  toolConfig: toolConfig.optional(),
  generationConfig: generationConfig.optional(),
});

export type GeminiGenerateContentRequest = z.infer<typeof geminiGenerateContentRequestSchema>;
export type GeminiContent = GeminiGenerateContentRequest["contents"][number];
export type GeminiPart = GeminiContent["parts"][number];
