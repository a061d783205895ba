import type { StreamEvent, UsageReport } from "../providers/types.js";
import { convertOpenAIUsage } from "../providers/openai/convert-usage.js";
import type { Meter } from "../metering/meter.js";
import { countTextTokens } from "../metering/estimate.js";
import { collectChoicesText } from "./chat-text.js";
import { applyEdits, findMembers, type Edit } from "./json-members.js";

// Relays an OpenAI chat SSE stream batch by batch: the public model ID replaces the upstream one, the usage
// chunk the gateway asked for reaches the client only if the client asked too, and whatever happens (end,
// upstream drop, client gone) the meter is settled exactly once, from upstream usage or a local count.

const sse = (json: string) => `data: ${json}\n\n`;
const DONE = "data: [DONE]\n\n";
const EDITED = ["model", "usage"] as const;

export interface ChatStreamOptions {
  meter: Meter;
  publicModel: string;
  requestId: string;
  /** Whether the client itself asked for stream_options.include_usage. */
  clientWantsUsage: boolean;
  first: IteratorResult<StreamEvent[]>;
  batches: AsyncIterator<StreamEvent[]>;
  /** Prompt tokens by the tokenizer, for a stream without upstream usage. */
  countPrompt: () => Promise<number>;
  /** Aborts the upstream request; aborted from outside, it means the client left. */
  upstream: AbortController;
}

/**
 * The SSE text for the client, one string per upstream batch ("" when a batch has nothing for the client);
 * the first comes from `first`, which the caller already read.
 */
export async function* relayChatStream(opts: ChatStreamOptions): AsyncGenerator<string, void, undefined> {
  const { meter } = opts;
  const publicModelJson = JSON.stringify(opts.publicModel);
  const delivered: string[] = [];
  let usage: UsageReport | null = null;

  // Counted once, when the stream is over (the usage chunk and the settlement must agree).
  let local: Promise<UsageReport> | undefined;
  const localUsage = (): Promise<UsageReport> =>
    (local ??= (async () => ({
      promptTokens: await opts.countPrompt(),
      completionTokens: await countTextTokens(delivered.join("")),
      cachedTokens: 0,
    }))());

  const settleLocal = (status: number, errorClass: "client_cancelled" | "upstream_error" | null) => {
    if (!meter.delivered) return meter.fail(null, errorClass === "client_cancelled" ? 499 : 502, errorClass ?? "upstream_error");
    if (usage) return meter.settle(usage, "upstream", status, errorClass);
    return meter.settle(localUsage(), "estimated", status, errorClass);
  };

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

  /** The chunk as the client gets it: edited in its text when that is unambiguous, else serialised again. */
  const rewrite = (chunk: Record<string, unknown>, raw: string, dropUsage: boolean): string => {
    const members = findMembers(raw, EDITED);
    if (!members) {
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

  // Turns one upstream event into the text the client gets ("" for nothing).
  const transform = (event: StreamEvent): string => {
    if ("done" in event) return DONE;
    const chunk = event.data;
    lastId = chunk.id ?? lastId;
    lastCreated = chunk.created ?? lastCreated;
    const reported = chunk.usage === undefined || chunk.usage === null ? null : convertOpenAIUsage(chunk.usage);
    if (reported) usage = reported;
    collectChoicesText(chunk.choices, "delta", delivered);
    if (!opts.clientWantsUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage !== undefined) return "";
    return sse(rewrite(chunk, event.raw, !opts.clientWantsUsage));
  };

  // The client can leave before the first write (and the relay would never hear of it): the disconnect
  // watcher's abort settles too. Settling twice is a no-op.
  opts.upstream.signal.addEventListener("abort", () => void settleLocal(499, "client_cancelled"), { once: true });

  // Set once the stream has run its course (or failed and settled); a consumer that stops reading earlier
  // means the client left.
  let over = false;
  try {
    for (let next = opts.first; !next.done; next = await opts.batches.next()) {
      let out = "";
      for (const event of next.value) {
        if ("done" in event && opts.clientWantsUsage && !usage && meter.delivered) out += usageChunk(await localUsage());
        const text = transform(event);
        if (!text) continue;
        meter.markFirstByte();
        out += text;
      }
      yield out;
    }
    // The upstream iterator ends after [DONE]; a stream that stopped without it was flagged as an error.
    // Settlement is tracked (drain() waits for it), so the end of the body does not wait for the database.
    over = true;
    void settleLocal(200, null);
  } catch {
    // Aborted: the client left, and the abort listener settled. Nobody reads this stream any more.
    over = true;
    if (opts.upstream.signal.aborted) return;
    // Dropped or broken upstream after delivery began: bill what was delivered, tell the client in-band.
    void settleLocal(200, "upstream_error");
    opts.upstream.abort();
    yield sse(
      JSON.stringify({
        error: {
          message: "The upstream stream ended unexpectedly.",
          type: "api_error",
          code: "upstream_stream_interrupted",
          param: null,
          request_id: opts.requestId,
        },
      }),
    );
  } finally {
    if (!over) opts.upstream.abort();
  }
}
