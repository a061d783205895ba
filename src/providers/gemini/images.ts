import { extended } from "../../objects.js";
import { postToEndpoint, type Endpoint } from "../http.js";
import { readJsonResult } from "../read-result.js";
import type { CallOptions, JsonResult, NeutralImageRequest, UsageReport } from "../types.js";
import { UpstreamAbort, type UpstreamSignal } from "../upstream-abort.js";
import { convertGeminiUsage } from "./convert-gemini-usage.js";
import { geminiModelPath } from "./generate-content.js";
import { addImageUsages } from "../upstream-images/add-image-usages.js";
import { geminiAnswerImages, geminiImageBody, geminiImageUsage } from "./image-generation.js";
import { parseInlineDataAnswer } from "./inline-data-spans.js";

// Gemini image generation and edits (docs/api.md, "Images"): `generateContent` asking for the IMAGE modality, one
// call per image asked for (`n`), since Gemini's image models refuse `candidateCount` above 1 ("Multiple candidates
// is not enabled"). The calls run side by side; the first failure ends the others, and the request fails as it did.
// The answers become one ImagesResponse, their images' base64 kept as the bytes they arrived in.

/** A signal of this attempt's own that follows the request's, so that one failed call can end its siblings. */
function following(parent: UpstreamSignal): { signal: UpstreamAbort; release(): void } {
  const signal = new UpstreamAbort();
  const abort = () => signal.abort();
  if (parent.aborted) abort();
  else if (parent instanceof UpstreamAbort) parent.once("abort", abort);
  else parent.addEventListener("abort", abort, { once: true });
  const release = () => (parent instanceof UpstreamAbort ? parent.off("abort", abort) : parent.removeEventListener("abort", abort));
  return { signal, release };
}

interface OneAnswer {
  images: ReturnType<typeof geminiAnswerImages>;
  usage: Record<string, unknown> | undefined;
  tokens: UsageReport | null;
}

async function oneCall(endpoint: Endpoint, body: string, options: CallOptions): Promise<OneAnswer> {
  const res = await postToEndpoint(endpoint, body, options, false, `/${geminiModelPath(options.target.upstreamModel)}:generateContent`);
  const answer = await readJsonResult(
    res,
    options.signal,
    (json) => convertGeminiUsage(json.usageMetadata),
    endpoint.maxAnswerBytes,
    parseInlineDataAnswer,
  );
  return { images: geminiAnswerImages(answer.body), usage: geminiImageUsage(answer.body.usageMetadata), tokens: answer.usage };
}

const addTokens = (a: UsageReport | null, b: UsageReport | null): UsageReport | null =>
  a && b
    ? {
        promptTokens: a.promptTokens + b.promptTokens,
        completionTokens: a.completionTokens + b.completionTokens,
        cachedTokens: a.cachedTokens + b.cachedTokens,
      }
    : null;

/** POST {base_url}/v1beta/models/{target model}:generateContent, `n` times; the answers as one ImagesResponse. */
export async function geminiImages(endpoint: Endpoint, request: NeutralImageRequest, options: CallOptions): Promise<JsonResult> {
  const body = JSON.stringify(geminiImageBody(request, options.target.upstreamModel));
  const own = following(options.signal);
  let answers: OneAnswer[];
  try {
    const calls = Array.from({ length: request.n }, () => oneCall(endpoint, body, extended(options, { signal: own.signal })));
    answers = await Promise.all(calls.map((call) => call.catch((err: unknown) => (own.signal.abort(), Promise.reject(err)))));
  } finally {
    own.release();
  }
  const [first, ...rest] = answers;
  let usage: unknown = first!.usage;
  let tokens = first!.tokens;
  for (const answer of rest) {
    usage = addImageUsages(usage, answer.usage);
    tokens = addTokens(tokens, answer.tokens);
  }
  const result: Record<string, unknown> = { data: answers.flatMap((answer) => answer.images) };
  if (usage !== undefined) result.usage = usage;
  return { kind: "json", status: 200, body: result, raw: "", usage: tokens };
}
