import type { HeadersFor } from "../http.js";

/** OpenAI's request headers: a bearer key. */
export const openaiHeaders: HeadersFor = (apiKey, stream) => ({
  "content-type": "application/json",
  authorization: `Bearer ${apiKey}`,
  accept: stream ? "text/event-stream" : "application/json",
});

/** A download's headers (a video's bytes): the key, and the `Accept` the OpenAI SDK sends for binary content. */
export const openaiBinaryHeaders: HeadersFor = (apiKey) => ({ authorization: `Bearer ${apiKey}`, accept: "application/binary" });
