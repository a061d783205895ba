import { convertOpenAIUsage } from "../../providers/openai/convert-openai-usage.js";
import type { StreamEvent, StreamUsageReader, UsageReport } from "../../providers/types.js";
import { collectChoicesText } from "../../providers/openai/chat-text.js";
import { localUsage } from "../estimate.js";
import type { RelayProtocol, StreamFailure } from "./stream-relay.js";
import { isChatStreamEnd } from "./chat-relay.js";

// The two ways a stream reaches a client whose protocol is not OpenAI chat (Anthropic messages, Gemini
// generateContent): relayed event by event when the target speaks the client's protocol, or translated from the
// OpenAI chat stream of a target that speaks chat. Both track the upstream's usage and keep what was delivered,
// so a stream without usage is billed from the local count (docs/billing.md).

/** An upstream event that is not chat's `[DONE]`. */
export type DataEvent = Exclude<StreamEvent, { done: true }>;

interface LocalCount {
  /** The prompt's tokens by the tokenizer. */
  countPrompt: () => Promise<number>;
  /** The in-band error of the client's protocol, for a stream that cannot go on after it began. */
  errorFrame: (requestId: string, code: StreamFailure) => string;
}

export interface NativeRelayOptions extends LocalCount {
  readUsage: StreamUsageReader;
  /**
   * Whether an event's usage is final. Usage read before it is provisional (Anthropic's message_start, Gemini's
   * early chunks): a stream that ends earlier is billed from the local count, never from a partial report.
   */
  isFinal: (data: Record<string, unknown>) => boolean;
  /** Whether an event's data can be the stream's end (its text then waits for the charge: stream-relay.ts). */
  closing: (data: Record<string, unknown>) => boolean;
  /** Appends the generated text one event carries (text, thinking, tool calls). */
  collectText: (data: Record<string, unknown>, into: string[]) => void;
  /** The event as the client gets it: the upstream's, with the public model ID put in. */
  write: (event: DataEvent) => string;
  /** The closing events of a stream ended at its output cap, with the usage billed (stream-relay.ts). */
  lengthEnd: (usage: UsageReport) => string;
}

/** A stream whose target speaks the client's protocol: each event relayed as written by `write`. */
export function nativeRelay(opts: NativeRelayOptions): RelayProtocol {
  const delivered: string[] = [];
  let usage: UsageReport | null = null;
  let final = false;
  return {
    closing: (event) => !("done" in event) && opts.closing(event.data),
    transform(event) {
      if ("done" in event) return "";
      usage = opts.readUsage(event.data, usage);
      final ||= opts.isFinal(event.data);
      opts.collectText(event.data, delivered);
      return opts.write(event);
    },
    usage: () => (final ? usage : null),
    countLocal: () => localUsage(opts.countPrompt, delivered.join("")),
    errorFrame: opts.errorFrame,
    output: { delivered, lengthEnd: (ctx) => ctx.localUsage().then(opts.lengthEnd) },
  };
}

/** The chat chunk that ends a translated stream at its output cap: every choice so far finishes for length. */
const LENGTH_CHUNK = { choices: [{ index: 0, delta: {}, finish_reason: "length" }] };

/** A translation of chat chunks into the client's events (src/providers/<client protocol>/chat-to-*-stream.ts). */
export interface ChatStreamTranslator {
  push(chunk: Record<string, unknown>): string[];
  /** The closing events, carrying `usage`. */
  end(usage: UsageReport): string[];
}

/**
 * An OpenAI chat stream told in the client's protocol. Chat's `[DONE]` closes it with the usage that is billed
 * (the upstream's, else the local count), so the client sees what it pays for.
 */
export function translatedChatRelay(translator: ChatStreamTranslator, opts: LocalCount): RelayProtocol {
  const delivered: string[] = [];
  let usage: UsageReport | null = null;
  const close = (billed: UsageReport) => translator.end(billed).join("");
  return {
    closing: isChatStreamEnd,
    transform(event, ctx) {
      if ("done" in event) return usage ? close(usage) : ctx.localUsage().then(close);
      const chunk = event.data;
      usage = convertOpenAIUsage(chunk.usage) ?? usage;
      collectChoicesText(chunk.choices, "delta", delivered);
      return translator.push(chunk).join("");
    },
    usage: () => usage,
    countLocal: () => localUsage(opts.countPrompt, delivered.join("")),
    errorFrame: opts.errorFrame,
    output: {
      delivered,
      lengthEnd: (ctx) => ctx.localUsage().then((billed) => translator.push(LENGTH_CHUNK).join("") + close(billed)),
    },
  };
}
