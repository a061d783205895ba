import { isFinalGeminiChunk } from "../../providers/gemini/generate-content.js";
import { readGeminiStreamUsage } from "../../providers/gemini/convert-gemini-usage.js";
import { collectGenerateContentText } from "../../providers/gemini/response-text.js";
import { withPublicModelIn } from "../public-model.js";
import { nativeRelay } from "./relay-protocols.js";
import { STREAM_FAILURE_MESSAGES, type RelayProtocol, type StreamFailure } from "./stream-relay.js";

// A Gemini generateContent stream from a target that speaks it (docs/translation.md), and the in-band error of
// the protocol, which translated streams use too.

/**
 * Gemini's in-band error, as Google writes one into a stream (a bare JSON object, not a `data:` event), which
 * @google/genai raises as an ApiError with its code. It ends the body, so it is never followed by a delimiter.
 */
export function generateContentErrorFrame(requestId: string, code: StreamFailure = "upstream_stream_interrupted"): string {
  const error = {
    code: code === "database_unavailable" ? 503 : 502,
    message: STREAM_FAILURE_MESSAGES[code],
    status: "UNAVAILABLE",
    details: [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: code.toUpperCase(),
        domain: "gateway",
        metadata: { request_id: requestId },
      },
    ],
  };
  return JSON.stringify({ error });
}

/** A native stream: each chunk as the provider sent it, with the public model ID as its modelVersion. */
export function relayNativeGenerateContent(publicModel: string, countPrompt: () => Promise<number>): RelayProtocol {
  return nativeRelay({
    readUsage: readGeminiStreamUsage,
    isFinal: isFinalGeminiChunk,
    collectText: collectGenerateContentText,
    countPrompt,
    errorFrame: generateContentErrorFrame,
    closing: isFinalGeminiChunk,
    write: (event) => `data: ${withPublicModelIn(event.raw, event.data, publicModel, "modelVersion")}\n\n`,
    lengthEnd: (usage) =>
      `data: ${JSON.stringify({
        candidates: [{ content: { role: "model", parts: [{ text: "" }] }, finishReason: "MAX_TOKENS", index: 0 }],
        usageMetadata: {
          promptTokenCount: usage.promptTokens,
          candidatesTokenCount: usage.completionTokens,
          totalTokenCount: usage.promptTokens + usage.completionTokens,
        },
        modelVersion: publicModel,
      })}\n\n`,
  });
}
