import { z } from "zod";
import { GatewayConnectionError, GatewayHttpError } from "../client/errors.js";
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

const envelopeSchema = z.object({ error: z.object({ code: z.string().nullable().optional(), message: z.string() }) });

export async function chatComplete(options: ChatOptions, messages: ChatMessage[], signal: AbortSignal): Promise<ChatAnswer> {
  const doFetch = options.fetch ?? fetch;
  const url = `${options.url.replace(/\/+$/, "")}/v1/chat/completions`;
  let response: Response;
  let text: string;
  try {
    response = await doFetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${options.apiKey}`, "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ model: options.model, messages }),
      signal,
    });
    text = await response.text();
  } catch (err) {
    if (signal.aborted) throw err;
    throw new GatewayConnectionError(`POST /v1/chat/completions: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const requestId = response.headers.get("x-request-id");
  const json = parseJson(text);
  if (!response.ok) throw refusal(response, json, requestId);
  const parsed = answerSchema.safeParse(json);
  if (!parsed.success) {
    // A 2xx the chat shape does not describe: no retry will make the gateway answer otherwise.
    throw new PermanentTaskError(
      "chat_unexpected_answer",
      `POST /v1/chat/completions answered ${response.status} without a chat completion`,
    );
  }
  const { choices, usage } = parsed.data;
  return {
    content: (choices[0]!.message.content ?? "").trim(),
    inputTokens: usage?.prompt_tokens ?? 0,
    outputTokens: usage?.completion_tokens ?? 0,
  };
}

function refusal(response: Response, json: unknown, requestId: string | null): Error {
  const envelope = envelopeSchema.safeParse(json);
  const code = (envelope.success && envelope.data.error.code) || `http_${response.status}`;
  const message = envelope.success ? envelope.data.error.message : `answered ${response.status}`;
  const retryable = response.status === 429 || response.status >= 500;
  if (!retryable) return new PermanentTaskError(`chat_${code}`.slice(0, 100), `the chat call was refused: ${response.status} ${message}`);
  const retryAfter = response.headers.get("retry-after");
  const retryAfterMs = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) * 1000 : null;
  return new GatewayHttpError(response.status, code, `POST /v1/chat/completions: ${message}`, null, requestId, retryAfterMs);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
