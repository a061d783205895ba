import type { StreamEvent, UsageReport } from "../providers/types.js";
import { convertOpenAIUsage } from "../providers/openai/convert-usage.js";
import { countTextTokens } from "../metering/estimate.js";
import type { PushedBody } from "../server/respond.js";
import { collectChoicesText } from "./chat-text.js";
import { applyEdits, findMembers, type Edit, type Member } from "./json-members.js";
import { relayStream, type RelayOptions, type RelayProtocol } from "./stream-relay.js";

// An OpenAI chat SSE stream as the client gets it: the public model ID replaces the upstream one, and the
// usage chunk the gateway asked for reaches the client only if the client asked too (settling is relayStream's).
//
// A chunk is read through its text: its top-level members are located, the usage (when there is one) is the
// only part parsed, and the choices are kept as text, parsed only if the stream has to be counted locally
// (no upstream usage, or a client that left). Most chunks are thus relayed without building their objects.

const sse = (json: string) => `data: ${json}\n\n`;
const DONE = "data: [DONE]\n\n";
const MEMBERS = ["model", "usage", "choices", "id", "created"] as const;
/** Choices kept as text at most; beyond, they are counted into delivered text so a long stream stays small. */
const MAX_KEPT_CHOICES = 256;

export interface ChatStreamOptions extends RelayOptions {
  publicModel: string;
  /** Whether the client itself asked for stream_options.include_usage. */
  clientWantsUsage: boolean;
  /** Prompt tokens by the tokenizer, for a stream without upstream usage. */
  countPrompt: () => Promise<number>;
}

export function relayChatStream(opts: ChatStreamOptions): PushedBody {
  const publicModelJson = JSON.stringify(opts.publicModel);
  const delivered: string[] = [];
  // The `choices` of chunks not yet counted into `delivered`, as JSON text.
  let keptChoices: string[] = [];
  let usage: UsageReport | null = null;
  // The JSON text of the last chunk's id and created, for a usage chunk the gateway writes itself.
  let lastId = '""';
  let lastCreated = "0";

  const countKept = () => {
    for (const choices of keptChoices) collectChoicesText(JSON.parse(choices), "delta", delivered);
    keptChoices = [];
  };

  // A client that asked for usage gets its usage chunk even when the upstream sent none: the local count, the
  // same numbers it is billed for, under the stream's own id.
  const usageChunk = (u: UsageReport) =>
    sse(
      JSON.stringify({
        id: JSON.parse(lastId),
        object: "chat.completion.chunk",
        created: JSON.parse(lastCreated),
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

  const valueOf = (raw: string, member: Member | undefined) => (member ? raw.slice(member.valueStart, member.valueEnd) : undefined);

  /** A chunk whose members can be edited in its text. */
  const relayText = (raw: string, members: Map<string, Member>): string => {
    const id = valueOf(raw, members.get("id"));
    if (id !== undefined && id !== "null") lastId = id;
    const created = valueOf(raw, members.get("created"));
    if (created !== undefined && created !== "null") lastCreated = created;
    const usageMember = members.get("usage");
    const usageText = valueOf(raw, usageMember);
    if (usageText !== undefined && usageText !== "null") usage = convertOpenAIUsage(JSON.parse(usageText)) ?? usage;
    const choices = valueOf(raw, members.get("choices"));
    if (choices !== undefined) {
      keptChoices.push(choices);
      if (keptChoices.length >= MAX_KEPT_CHOICES) countKept();
    }
    if (!opts.clientWantsUsage && usageMember && choices !== undefined && /^\[\s*\]$/.test(choices)) return "";
    const edits: Edit[] = [];
    const model = members.get("model");
    if (model && raw.charCodeAt(model.valueStart) === 34) edits.push({ start: model.valueStart, end: model.valueEnd, text: publicModelJson });
    if (!opts.clientWantsUsage && usageMember) edits.push({ start: usageMember.start, end: usageMember.end, text: "" });
    return sse(applyEdits(raw, edits));
  };

  /** A chunk whose text is ambiguous to edit (a repeated or escaped key): parsed and serialised again. */
  const relayParsed = (chunk: Record<string, unknown>): string => {
    if (chunk.id !== undefined && chunk.id !== null) lastId = JSON.stringify(chunk.id);
    if (chunk.created !== undefined && chunk.created !== null) lastCreated = JSON.stringify(chunk.created);
    if (chunk.usage !== undefined && chunk.usage !== null) usage = convertOpenAIUsage(chunk.usage) ?? usage;
    // Delivered text stays in stream order.
    countKept();
    collectChoicesText(chunk.choices, "delta", delivered);
    if (!opts.clientWantsUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage !== undefined) return "";
    if (typeof chunk.model === "string") chunk.model = opts.publicModel;
    if (!opts.clientWantsUsage) delete chunk.usage;
    return sse(JSON.stringify(chunk));
  };

  const protocol: RelayProtocol = {
    transform(event: StreamEvent, ctx) {
      if ("done" in event) {
        return opts.clientWantsUsage && !usage && ctx.delivered ? ctx.localUsage().then((u) => usageChunk(u) + DONE) : DONE;
      }
      const members = findMembers(event.raw, MEMBERS);
      return members ? relayText(event.raw, members) : relayParsed(event.data);
    },
    usage: () => usage,
    countLocal: async () => {
      countKept();
      return {
        promptTokens: await opts.countPrompt(),
        completionTokens: await countTextTokens(delivered.join("")),
        cachedTokens: 0,
      };
    },
    errorFrame: (requestId) =>
      sse(
        JSON.stringify({
          error: {
            message: "The upstream stream ended unexpectedly.",
            type: "api_error",
            code: "upstream_stream_interrupted",
            param: null,
            request_id: requestId,
          },
        }),
      ),
  };
  return relayStream(opts, protocol);
}
