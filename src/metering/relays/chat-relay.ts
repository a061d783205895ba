import type { StreamEvent, UsageReport } from "../../providers/types.js";
import { convertOpenAIUsage } from "../../providers/openai/convert-openai-usage.js";
import { countTextTokens } from "../estimate.js";
import { collectChoicesText } from "../../providers/openai/chat-text.js";
import { applyEdits, findMembers, type Edit } from "../json-members.js";
import type { PushedBody } from "../../server/respond.js";
import { relayStream, STREAM_FAILURE_MESSAGES, type RelayOptions, type RelayProtocol } from "./stream-relay.js";
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

/** Chat's end: the usage chunk (no choices, a usage) and `[DONE]`. */
export function isChatStreamEnd(event: StreamEvent): boolean {
  if ("done" in event) return true;
  const { choices, usage } = event.data;
  return Array.isArray(choices) && choices.length === 0 && usage !== undefined && usage !== null;
}

export function relayChatStream(opts: ChatStreamOptions): PushedBody {
  const publicModelJson = JSON.stringify(opts.publicModel);
  const delivered: string[] = [];
  let usage: UsageReport | null = null;

  // A client that asked for usage gets its usage chunk even when the upstream sent none: the local count, the
  // same numbers it is billed for, under the stream's own id.
  let lastId: unknown = "";
  let lastCreated: unknown = 0;
  const usageChunk = (u: UsageReport) =>
    sse(
      JSON.stringify({
        id: lastId,
        object: "chat.completion.chunk",
        created: lastCreated,
        model: opts.publicModel,
        choices: [],
        usage: {
          prompt_tokens: u.promptTokens,
          completion_tokens: u.completionTokens,
          total_tokens: u.promptTokens + u.completionTokens,
          prompt_tokens_details: { cached_tokens: u.cachedTokens },
        },
      }),
    );

  /**
   * The chunk as the client gets it: edited in its text when that is unambiguous, else serialised again (and
   * always when `raw` is null: the chunk was changed, its images delivered).
   */
  const rewrite = (chunk: Record<string, unknown>, raw: string | null, dropUsage: boolean): string => {
    const members = raw === null ? null : findMembers(raw, EDITED);
    if (raw === null || !members) {
      if (typeof chunk.model === "string") chunk.model = opts.publicModel;
      if (dropUsage) delete chunk.usage;
      return JSON.stringify(chunk);
    }
    const edits: Edit[] = [];
    const model = members.get("model");
    if (model && typeof chunk.model === "string") edits.push({ start: model.valueStart, end: model.valueEnd, text: publicModelJson });
    const usageMember = members.get("usage");
    if (dropUsage && usageMember) edits.push({ start: usageMember.start, end: usageMember.end, text: "" });
    return applyEdits(raw, edits);
  };

  /** One upstream chunk as the client's text; `raw` as for rewrite. */
  const relayChunk = (chunk: Record<string, unknown>, raw: string | null): string => {
    lastId = chunk.id ?? lastId;
    lastCreated = chunk.created ?? lastCreated;
    const reported = chunk.usage === undefined || chunk.usage === null ? null : convertOpenAIUsage(chunk.usage);
    if (reported) usage = reported;
    collectChoicesText(chunk.choices, "delta", delivered);
    if (!opts.clientWantsUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage !== undefined) return "";
    return sse(rewrite(chunk, raw, !opts.clientWantsUsage));
  };

  /** The finish chunk of every choice, with `reason`. */
  const finishChunk = (reason: string) => {
    const choices: object[] = [];
    for (let index = 0; index < opts.choices; index++) choices.push({ index, delta: {}, logprobs: null, finish_reason: reason });
    return sse(JSON.stringify({ id: lastId, object: "chat.completion.chunk", created: lastCreated, model: opts.publicModel, choices }));
  };

  const protocol: RelayProtocol = {
    closing: isChatStreamEnd,
    transform(event: StreamEvent, ctx) {
      if ("done" in event) {
        return opts.clientWantsUsage && !usage && ctx.delivered ? ctx.localUsage().then((u) => usageChunk(u) + DONE) : DONE;
      }
      const chunk = event.data;
      const images = chatImageSlots(chunk.choices, "delta");
      // Nothing of a chunk whose images fail counts, its usage included: the stream ends before it (stream-relay.ts).
      if (images) return deliverChatImages(images, opts.download, opts.upstream).then(() => relayChunk(chunk, null));
      return relayChunk(chunk, event.raw);
    },
    usage: () => usage,
    countLocal: async () => ({
      promptTokens: await opts.countPrompt(),
      completionTokens: await countTextTokens(delivered.join("")),
      cachedTokens: 0,
    }),
    output: {
      delivered,
      lengthEnd: (ctx) =>
        opts.clientWantsUsage ? ctx.localUsage().then((u) => finishChunk("length") + usageChunk(u) + DONE) : finishChunk("length") + DONE,
    },
    errorFrame: (requestId, code) =>
      sse(
        JSON.stringify({
          error: {
            message: STREAM_FAILURE_MESSAGES[code],
            type: "api_error",
            code,
            param: null,
            request_id: requestId,
          },
        }),
      ),
  };
  return relayStream(opts, protocol);
}
