// Token counts the gateway makes itself: a cheap, conservative estimate on the hot path (admission and the
// hold), and a real tokenizer (o200k_base) only where a number is billed or a refusal depends on it. The
// tokenizer's tables take about 70 MB, so they are loaded on first use: a gateway whose providers report usage
// never needs them.

let tokenizer: Promise<typeof import("gpt-tokenizer")> | undefined;
const countTokens = async (text: string) => (await (tokenizer ??= import("gpt-tokenizer"))).countTokens(text);

/** Tokens a message costs beyond its content (role, separators), as OpenAI's chat format adds. */
const PER_MESSAGE = 4;
/** A picture in a prompt: OpenAI's high-detail 1024² tile count, a conservative flat figure. */
const PER_IMAGE = 765;

interface PromptParts {
  text: string[];
  images: number;
  messages: number;
}

function collect(messages: readonly unknown[]): PromptParts {
  const parts: PromptParts = { text: [], images: 0, messages: messages.length };
  for (const message of messages) {
    if (message === null || typeof message !== "object") continue;
    const { content, tool_calls: toolCalls, name } = message as Record<string, unknown>;
    if (typeof name === "string") parts.text.push(name);
    if (typeof content === "string") parts.text.push(content);
    else if (Array.isArray(content)) {
      for (const part of content) {
        const p = part as Record<string, unknown> | null;
        if (p?.type === "text" && typeof p.text === "string") parts.text.push(p.text);
        else if (p?.type === "image_url" || p?.type === "input_image") parts.images += 1;
        else parts.text.push(JSON.stringify(part));
      }
    } else if (content !== undefined && content !== null) parts.text.push(JSON.stringify(content));
    if (toolCalls !== undefined) parts.text.push(JSON.stringify(toolCalls));
  }
  return parts;
}

/** Upper-bound-ish estimate without tokenizing: 3 characters a token (English averages about 4). */
export const estimateTextTokens = (text: string): number => Math.ceil(text.length / 3);

/** The same estimate for chat messages, with what each message and picture adds. */
export function estimatePromptTokens(messages: readonly unknown[], extra: readonly unknown[] = []): number {
  const parts = collect(messages);
  let chars = 0;
  for (const text of parts.text) chars += text.length;
  for (const item of extra) if (item !== undefined) chars += JSON.stringify(item).length;
  return Math.ceil(chars / 3) + parts.messages * PER_MESSAGE + parts.images * PER_IMAGE;
}

/** The tokenizer's count of the same parts; used when billing without upstream usage or near a limit. */
export async function countPromptTokens(messages: readonly unknown[], extra: readonly unknown[] = []): Promise<number> {
  const parts = collect(messages);
  let tokens = parts.messages * PER_MESSAGE + parts.images * PER_IMAGE;
  for (const text of parts.text) tokens += await countTokens(text);
  for (const item of extra) if (item !== undefined) tokens += await countTokens(JSON.stringify(item));
  return tokens;
}

export const countTextTokens = async (text: string): Promise<number> => (text.length === 0 ? 0 : countTokens(text));
