import { asObject, tokenCount } from "../../providers/json-guards.js";
import { readGeminiStreamUsage } from "../../providers/gemini/convert-gemini-usage.js";
import { toChatUsage } from "../../providers/gemini/convert-gemini-answer-to-chat.js";
import { isFinalGeminiChunk } from "../../providers/gemini/generate-content.js";
import { createGeminiToChatStream, type ChatChunk, type GeminiToChatStream } from "../../providers/gemini/gemini-to-chat-stream.js";
import { collectGenerateContentText } from "../../providers/gemini/response-text.js";
import type { StreamEvent, UsageReport } from "../../providers/types.js";
import type { UpstreamAbort } from "../../providers/upstream-abort.js";
import { chatImageSlots, deliverChatImages, type ImageSlot } from "../../providers/upstream-images/chat-images.js";
import type { ImageDownload } from "../../providers/upstream-images/image-delivery.js";
import { localUsage } from "../estimate.js";
import { chatErrorFrame } from "./chat-relay.js";
import type { CappedOutput, RelayContext, RelayProtocol, StreamFailure } from "./stream-relay.js";

// A Gemini stream told to a chat client (docs/translation.md, "OpenAI chat → Gemini"): each Gemini chunk becomes
// chat chunks (src/providers/gemini/gemini-to-chat-stream.ts), their images delivered as data: URIs by the
// validated path first; a Gemini body simply ends after its final chunk, so chat's usage chunk (when the client
// asked for it) and `[DONE]` are written at the end, carrying the usage billed. Usage is the final chunk's
// usageMetadata; a stream cut before it is billed from the local count (docs/billing.md).

const sse = (chunk: ChatChunk) => `data: ${JSON.stringify(chunk)}\n\n`;
const DONE = "data: [DONE]\n\n";

export interface GeminiChatRelayOptions {
  publicModel: string;
  /** Whether the client asked for stream_options.include_usage. */
  clientWantsUsage: boolean;
  /** Prompt tokens by the tokenizer, for a stream without upstream usage. */
  countPrompt: () => Promise<number>;
  /** Fetches the image links a chunk may carry (SSRF-checked). */
  download: ImageDownload;
  upstream: UpstreamAbort;
}

export function geminiChatRelay(opts: GeminiChatRelayOptions): RelayProtocol {
  return new GeminiChatRelay(opts, createGeminiToChatStream({ publicModel: opts.publicModel }));
}

class GeminiChatRelay implements RelayProtocol {
  readonly output: CappedOutput;
  private readonly delivered: string[] = [];
  private reported: UsageReport | null = null;
  private thoughts = 0;
  private final = false;

  constructor(
    private readonly opts: GeminiChatRelayOptions,
    private readonly translator: GeminiToChatStream,
  ) {
    this.output = { delivered: this.delivered, lengthEnd: (ctx) => this.lengthEnd(ctx) };
  }

  closing(event: StreamEvent): boolean {
    return !("done" in event) && isFinalGeminiChunk(event.data);
  }

  transform(event: StreamEvent): string | Promise<string> {
    if ("done" in event) return "";
    const data = event.data;
    const chunks = this.translator.push(data);
    let slots: ImageSlot[] | null = null;
    for (const chunk of chunks) {
      const found = chatImageSlots(chunk.choices, "delta");
      if (found) (slots ??= []).push(...found);
    }
    // Nothing of a chunk whose images fail counts, its usage included: the stream ends before it (stream-relay.ts).
    if (slots) return deliverChatImages(slots, this.opts.download, this.opts.upstream).then(() => this.accept(data, chunks));
    return this.accept(data, chunks);
  }

  usage(): UsageReport | null {
    return this.final ? this.reported : null;
  }

  countLocal(): Promise<UsageReport> {
    return localUsage(this.opts.countPrompt, this.delivered.join(""));
  }

  errorFrame(requestId: string, code: StreamFailure): string {
    return chatErrorFrame(requestId, code);
  }

  end(ctx: RelayContext): string | Promise<string> {
    if (!this.opts.clientWantsUsage) return DONE;
    const billed = this.usage();
    return billed ? this.usageEnd(billed, this.thoughts) : ctx.localUsage().then((u) => this.usageEnd(u, 0));
  }

  /** One Gemini chunk, delivered: its usage and text now count. */
  private accept(data: Record<string, unknown>, chunks: ChatChunk[]): string {
    this.reported = readGeminiStreamUsage(data, this.reported);
    this.thoughts = tokenCount(asObject(data.usageMetadata)?.thoughtsTokenCount) ?? this.thoughts;
    this.final ||= isFinalGeminiChunk(data);
    collectGenerateContentText(data, this.delivered);
    return chunks.map(sse).join("");
  }

  private usageEnd(usage: UsageReport, thoughts: number): string {
    return sse(this.translator.usageChunk(toChatUsage(usage, thoughts))) + DONE;
  }

  private lengthEnd(ctx: RelayContext): string | Promise<string> {
    const finish = this.translator.finishAll("length");
    const text = finish ? sse(finish) : "";
    return this.opts.clientWantsUsage ? ctx.localUsage().then((u) => text + this.usageEnd(u, 0)) : text + DONE;
  }
}
