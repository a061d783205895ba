import type { StreamEvent, UsageReport } from "../../providers/types.js";
import { convertOpenAIUsage } from "../../providers/openai/convert-openai-usage.js";
import { countTextTokens } from "../estimate.js";
import { collectChoicesText } from "../../providers/openai/chat-text.js";
import { applyEdits, findMembers, type Edit } from "../json-members.js";
import type { PushedBody } from "../../server/respond.js";
import {
  relayStream,
  STREAM_FAILURE_MESSAGES,
  type CappedOutput,
  type RelayContext,
  type RelayOptions,
  type RelayProtocol,
  type StreamFailure,
} from "./stream-relay.js";
import { chatImageSlots, deliverChatImages } from "../../providers/upstream-images/chat-images.js";
import type { ImageDownload } from "../../providers/upstream-images/image-delivery.js";

// An OpenAI chat SSE stream as the client gets it: the public model ID replaces the upstream one, the usage
// chunk the gateway asked for reaches the client only if the client asked too (settling is relayStream's), and
// a chunk's images are delivered as data: URIs (src/providers/upstream-images/chat-images.ts); one that cannot be ends the stream.

const sse = (json: string) => `data: ${json}\n\n`;
const DONE = "data: [DONE]\n\n";
const EDITED = ["model", "usage"] as const;

export interface ChatStreamOptions extends RelayOptions {
  publicModel: string;
  /** Whether the client itself asked for stream_options.include_usage. */
  clientWantsUsage: boolean;
  /** Prompt tokens by the tokenizer, for a stream without upstream usage. */
  countPrompt: () => Promise<number>;
  /** Fetches the image links a chunk may carry (SSRF-checked). */
  download: ImageDownload;
  /** The request's `n`: each choice gets its finish chunk when the stream is ended at its output cap. */
  choices: number;
}

/** Chat's in-band error: a stream that cannot go on after it began ends with it, without `[DONE]`. */
export function chatErrorFrame(requestId: string, code: StreamFailure): string {
  return sse(
    JSON.stringify({
      error: {
        message: STREAM_FAILURE_MESSAGES[code],
        type: "api_error",
        code,
        param: null,
        request_id: requestId,
      },
    }),
  );
}

/** Chat's end: the usage chunk (no choices, a usage) and `[DONE]`. */
export function isChatStreamEnd(event: StreamEvent): boolean {
  if ("done" in event) return true;
  const { choices, usage } = event.data;
  return Array.isArray(choices) && choices.length === 0 && usage !== undefined && usage !== null;
}

export function relayChatStream(opts: ChatStreamOptions): PushedBody {
  return relayStream(opts, new ChatRelay(opts));
}

/** Chat's relay protocol for one stream. A class: its methods are defined once, not a closure each per stream. */
class ChatRelay implements RelayProtocol {
  readonly closing = isChatStreamEnd;
  readonly output: CappedOutput;
  private readonly publicModelJson: string;
  private readonly delivered: string[] = [];
  private reported: UsageReport | null = null;
  // A client that asked for usage gets its usage chunk even when the upstream sent none: the local count, the
  // same numbers it is billed for, under the stream's own id.
  private lastId: unknown = "";
  private lastCreated: unknown = 0;

  constructor(private readonly opts: ChatStreamOptions) {
    this.publicModelJson = JSON.stringify(opts.publicModel);
    this.output = { delivered: this.delivered, lengthEnd: (ctx) => this.lengthEnd(ctx) };
  }

  transform(event: StreamEvent, ctx: RelayContext): string | Promise<string> {
    if ("done" in event) {
      return this.opts.clientWantsUsage && !this.reported && ctx.delivered ? ctx.localUsage().then((u) => this.usageChunk(u) + DONE) : DONE;
    }
    const chunk = event.data;
    const images = chatImageSlots(chunk.choices, "delta");
    // Nothing of a chunk whose images fail counts, its usage included: the stream ends before it (stream-relay.ts).
    if (images) return deliverChatImages(images, this.opts.download, this.opts.upstream).then(() => this.relayChunk(chunk, null));
    return this.relayChunk(chunk, event.raw);
  }

  usage(): UsageReport | null {
    return this.reported;
  }

  async countLocal(): Promise<UsageReport> {
    return {
      promptTokens: await this.opts.countPrompt(),
      completionTokens: await countTextTokens(this.delivered.join("")),
      cachedTokens: 0,
    };
  }

  errorFrame(requestId: string, code: StreamFailure): string {
    return chatErrorFrame(requestId, code);
  }

  private lengthEnd(ctx: RelayContext): string | Promise<string> {
    return this.opts.clientWantsUsage
      ? ctx.localUsage().then((u) => this.finishChunk("length") + this.usageChunk(u) + DONE)
      : this.finishChunk("length") + DONE;
  }

  /** One upstream chunk as the client's text; `raw` as for rewrite. */
  private relayChunk(chunk: Record<string, unknown>, raw: string | null): string {
    this.lastId = chunk.id ?? this.lastId;
    this.lastCreated = chunk.created ?? this.lastCreated;
    const reported = chunk.usage === undefined || chunk.usage === null ? null : convertOpenAIUsage(chunk.usage);
    if (reported) this.reported = reported;
    collectChoicesText(chunk.choices, "delta", this.delivered);
    const clientWantsUsage = this.opts.clientWantsUsage;
    if (!clientWantsUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage !== undefined) return "";
    return sse(this.rewrite(chunk, raw, !clientWantsUsage));
  }

  /**
   * The chunk as the client gets it: edited in its text when that is unambiguous, else serialised again (and
   * always when `raw` is null: the chunk was changed, its images delivered).
   */
  private rewrite(chunk: Record<string, unknown>, raw: string | null, dropUsage: boolean): string {
    const members = raw === null ? null : findMembers(raw, EDITED);
    if (raw === null || !members) {
      if (typeof chunk.model === "string") chunk.model = this.opts.publicModel;
      if (dropUsage) delete chunk.usage;
      return JSON.stringify(chunk);
    }
    const edits: Edit[] = [];
    const model = members.get("model");
    if (model && typeof chunk.model === "string") edits.push({ start: model.valueStart, end: model.valueEnd, text: this.publicModelJson });
    const usageMember = members.get("usage");
    if (dropUsage && usageMember) edits.push({ start: usageMember.start, end: usageMember.end, text: "" });
    return applyEdits(raw, edits);
  }

  private usageChunk(u: UsageReport): string {
    return this.chunk([], {
      prompt_tokens: u.promptTokens,
      completion_tokens: u.completionTokens,
      total_tokens: u.promptTokens + u.completionTokens,
      prompt_tokens_details: { cached_tokens: u.cachedTokens },
    });
  }

  /** The finish chunk of every choice, with `reason`. */
  private finishChunk(reason: string): string {
    const choices: object[] = [];
    for (let index = 0; index < this.opts.choices; index++) choices.push({ index, delta: {}, logprobs: null, finish_reason: reason });
    return this.chunk(choices);
  }

  /** A chunk of the gateway's own, under the stream's id and the public model. */
  private chunk(choices: object[], usage?: object): string {
    const chunk = { id: this.lastId, object: "chat.completion.chunk", created: this.lastCreated, model: this.opts.publicModel, choices };
    return sse(JSON.stringify(usage ? Object.assign(chunk, { usage }) : chunk));
  }
}
