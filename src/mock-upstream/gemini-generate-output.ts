import { jsonEvent, type MockEvent } from "./sse.js";

/**
 * The shapes of a Gemini answer: one `GenerateContentResponse` (JSON), or one per SSE `data:` event for
 * `streamGenerateContent?alt=sse` (Gemini sends no `event:` lines and no end marker).
 */

type Part = { text: string } | { functionCall: { name: string; args: object } } | { inlineData: { mimeType: string; data: string } };

/** One entry of a usage breakdown (`ModalityTokenCount`). */
export type ModalityCount = { modality: "TEXT" | "IMAGE"; tokenCount: number };

/** What to answer, independent of JSON or SSE delivery. */
export interface Plan {
  model: string;
  responseId: string;
  prompt: number;
  /** One part per stream chunk: a text piece per word, the one function call, or an answer's text and images. */
  parts: Part[];
  /** candidatesTokenCount. */
  output: number;
  finishReason: "STOP" | "MAX_TOKENS" | "IMAGE_SAFETY" | "NO_IMAGE";
  /** Image answers: the counts by modality, which Gemini reports beside the totals (omitted: none reported). */
  details?: { prompt: ModalityCount[]; candidates: ModalityCount[] };
  /** A prompt Gemini blocked: no candidates, its promptFeedback instead. */
  blockReason?: "SAFETY";
}

function usageMetadata(p: Plan) {
  // proto3 JSON leaves zero counts (and empty lists) out.
  return {
    promptTokenCount: p.prompt,
    ...(p.output > 0 ? { candidatesTokenCount: p.output } : {}),
    totalTokenCount: p.prompt + p.output,
    ...(p.details ? { promptTokensDetails: p.details.prompt } : {}),
    ...(p.details && p.details.candidates.length > 0 ? { candidatesTokensDetails: p.details.candidates } : {}),
  };
}

function chunk(p: Plan, parts: Part[], finished: boolean, usage: object | undefined) {
  const content = parts.length > 0 ? { content: { parts, role: "model" } } : {};
  return {
    ...(p.blockReason
      ? { promptFeedback: { blockReason: p.blockReason } }
      : { candidates: [{ ...content, ...(finished ? { finishReason: p.finishReason } : {}), index: 0 }] }),
    ...(usage ? { usageMetadata: usage } : {}),
    modelVersion: p.model,
    responseId: p.responseId,
  };
}

/** The JSON answer: the text pieces joined into one part, as Gemini answers a non-streamed request. */
export function generateResponse(p: Plan, omitUsage: boolean) {
  const texts = p.parts.flatMap((part) => ("text" in part ? [part.text] : []));
  const parts = texts.length === p.parts.length && texts.length > 0 ? [{ text: texts.join("") }] : p.parts;
  return chunk(p, parts, true, omitUsage ? undefined : usageMetadata(p));
}

/**
 * One chunk per part (an image whole in its chunk, as Gemini streams it). As Gemini does, every chunk carries
 * usageMetadata, but only the last one the final counts (the others the prompt alone, without
 * candidatesTokenCount), and the last one carries the finishReason: a gateway must take usage from the last
 * chunk, neither the first nor a sum. An answer without parts (blocked, filtered) is that last chunk alone. A
 * stream that `x-mock-drop-after` will cut is built `dropping`, without that last chunk's finish and final usage,
 * since the cut comes before them.
 */
export function streamChunks(p: Plan, opts: { omitUsage: boolean; dropping: boolean }): MockEvent[] {
  const promptOnly = { promptTokenCount: p.prompt, totalTokenCount: p.prompt };
  if (p.parts.length === 0) return [jsonEvent(chunk(p, [], true, opts.omitUsage ? undefined : usageMetadata(p)))];
  return p.parts.map((part, i) => {
    const last = i === p.parts.length - 1 && !opts.dropping;
    const usage = opts.omitUsage ? undefined : last ? usageMetadata(p) : promptOnly;
    return jsonEvent(chunk(p, [part], last, usage), { content: true });
  });
}
