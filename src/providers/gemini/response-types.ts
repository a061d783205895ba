// The GenerateContentResponse as the translations write it (proto3 JSON: lowerCamelCase names, zero counts
// left out). vendor-schemas/gemini-proto.json checks the field names and enum values against the reference.

export type GeminiFinishReason = "STOP" | "MAX_TOKENS" | "SAFETY" | "OTHER";

export type GeminiOutputPart = { text: string } | { functionCall: { id?: string; name: string; args: Record<string, unknown> } };

export type GeminiCandidate = {
  content: { role: "model"; parts: GeminiOutputPart[] };
  finishReason?: GeminiFinishReason;
  index: number;
};

export type GeminiUsageMetadata = {
  promptTokenCount: number;
  candidatesTokenCount?: number;
  cachedContentTokenCount?: number;
  totalTokenCount: number;
};

export type GenerateContentResponse = {
  candidates: GeminiCandidate[];
  usageMetadata?: GeminiUsageMetadata;
  modelVersion: string;
  responseId?: string;
};
