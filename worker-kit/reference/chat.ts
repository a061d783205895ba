import { z } from "zod";
import { GatewayHttpError } from "../client/errors.js";
import { createHttpCaller } from "../client/http.js";
import { PermanentTaskError } from "../runner/task.js";
import type { ChatMessage } from "./prompt.js";

// The reference worker's one model call: the gateway's own POST /v1/chat/completions with an inference key, so
// the call is metered and logged like any client's. Non-streaming, OpenAI chat shape. A refusal (a 4xx other
// than 429: a bad key, an unknown model, no quota for the model) will not change on a retry, so it fails the job
// for good; 429, 5xx and a connection that failed are the moment's fault and are thrown as the client's
// retryable errors, which the runner backs off on.

export interface ChatOptions {
  /** The gateway's root, such as http://127.0.0.1:8080. */
  url: string;
  /** An inference API key of the gateway. */
  apiKey: string;
  model: string;
  fetch?: typeof fetch;
}

export interface ChatAnswer {
  content: string;
  inputTokens: number;
  outputTokens: number;
}

const answerSchema = z.object({
  choices: z.array(z.object({ message: z.object({ content: z.string().nullable().optional() }) })).min(1),
  usage: z.object({ prompt_tokens: z.int().min(0), completion_tokens: z.int().min(0) }).nullish(),
});

// The call may take as long as the task's lease allows: the task's signal is its limit, not a fixed timeout.
const NO_TIMEOUT_OF_ITS_OWN_MS = 24 * 3600_000;

export async function chatComplete(options: ChatOptions, messages: ChatMessage[], signal: AbortSignal): Promise<ChatAnswer> {
  const call = createHttpCaller({ baseUrl: options.url, fetch: options.fetch, timeoutMs: NO_TIMEOUT_OF_ITS_OWN_MS });
  try {
    const { data } = await call({
      method: "POST",
      path: "/v1/chat/completions",
      headers: { authorization: `Bearer ${options.apiKey}` },
      body: { model: options.model, messages },
      answer: answerSchema,
      signal,
    });
    return {
      content: (data.choices[0]!.message.content ?? "").trim(),
      inputTokens: data.usage?.prompt_tokens ?? 0,
      outputTokens: data.usage?.completion_tokens ?? 0,
    };
  } catch (err) {
    // A refusal, or a 2xx that is not a chat completion: no retry will make the gateway answer otherwise.
    if (err instanceof GatewayHttpError && !err.retryable) {
      throw new PermanentTaskError(`chat_${err.code}`.slice(0, 100), `the chat call was refused: ${err.status} ${err.message}`);
    }
    throw err;
  }
}
