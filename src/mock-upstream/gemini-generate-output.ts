import { jsonEvent, type MockEvent } from "./sse.js";

/**
 * The shapes of a Gemini answer: one `GenerateContentResponse` (JSON), or one per SSE `data:` event for
 * `streamGenerateContent?alt=sse` (Gemini sends no `event:` lines and no end marker).
 */

type Part = { text: string } | { functionCall: { name: string; args: object } };

/** What to answer, independent of JSON or SSE delivery. */
export interface Plan {
  model: string;
  responseId: string;
  prompt: number;
  /** One part per stream chunk: a text piece per word, or the one function call. */
  parts: Part[];
  /** candidatesTokenCount. */
  output: number;
  finishReason: "STOP" | "MAX_TOKENS";
}

function usageMetadata(p: Plan) {
  return { promptTokenCount: p.prompt, candidatesTokenCount: p.output, totalTokenCount: p.prompt + p.output };
}

function chunk(p: Plan, parts: Part[], finished: boolean, usage: object | undefined) {
  return {
    candidates: [{ content: { parts, role: "model" }, ...(finished ? { finishReason: p.finishReason } : {}), index: 0 }],
    ...(usage ? { usageMetadata: usage } : {}),
    modelVersion: p.model,
    responseId: p.responseId,
  };
}

/** The JSON answer: the text pieces joined into one part, as Gemini answers a non-streamed request. */
export function generateResponse(p: Plan, omitUsage: boolean) {
  const texts = p.parts.flatMap((part) => ("text" in part ? [part.text] : []));
  const parts = texts.length === p.parts.length ? [{ text: texts.join("") }] : p.parts;
  return chunk(p, parts, true, omitUsage ? undefined : usageMetadata(p));
}

/**
 * One chunk per part. As Gemini does, every chunk carries usageMetadata, but only the last one the final
 * counts (the others the prompt alone, without candidatesTokenCount), and the last one carries the
 * finishReason: a gateway must take usage from the last chunk, neither the first nor a sum. A stream that
 * `x-mock-drop-after` will cut is built `dropping`, without that last chunk's finish and final usage, since
 * the cut comes before them.
 */
export function streamChunks(p: Plan, opts: { omitUsage: boolean; dropping: boolean }): MockEvent[] {
  const promptOnly = { promptTokenCount: p.prompt, totalTokenCount: p.prompt };
  return p.parts.map((part, i) => {
    const last = i === p.parts.length - 1 && !opts.dropping;
    const usage = opts.omitUsage ? undefined : last ? usageMetadata(p) : promptOnly;
    return jsonEvent(chunk(p, [part], last, usage), { content: true });
  });
}
