import type { HeadersFor } from "../http.js";

/** OpenAI's request headers: a bearer key. */
export const openaiHeaders: HeadersFor = (apiKey, stream) => ({
  "content-type": "application/json",
  authorization: `Bearer ${apiKey}`,
  accept: stream ? "text/event-stream" : "application/json",
});
