import type { StreamEvent, UsageReport } from "../providers/types.js";
import { convertOpenAIUsage } from "../providers/openai/convert-usage.js";
import type { Meter } from "../metering/meter.js";
import { countTextTokens } from "../metering/estimate.js";
import { collectChoicesText } from "./chat-text.js";

// Relays an OpenAI chat SSE stream chunk by chunk: the public model ID replaces the upstream one, the usage
// chunk the gateway asked for reaches the client only if the client asked too, and whatever happens (end,
// upstream drop, client gone) the meter is settled exactly once, from upstream usage or a local count.

const encoder = new TextEncoder();
const sse = (data: unknown) => encoder.encode(`data: ${JSON.stringify(data)}\n\n`);
const DONE = encoder.encode("data: [DONE]\n\n");

export interface ChatStreamOptions {
  meter: Meter;
  publicModel: string;
  requestId: string;
  /** Whether the client itself asked for stream_options.include_usage. */
  clientWantsUsage: boolean;
  first: IteratorResult<StreamEvent>;
  events: AsyncIterator<StreamEvent>;
  /** Prompt tokens by the tokenizer, for a stream without upstream usage. */
  countPrompt: () => Promise<number>;
  /** Aborts the upstream request; aborted from outside, it means the client left. */
  upstream: AbortController;
}

export function relayChatStream(opts: ChatStreamOptions): ReadableStream<Uint8Array> {
  const { meter } = opts;
  const delivered: string[] = [];
  let usage: UsageReport | null = null;
  let pending: IteratorResult<StreamEvent> | null = opts.first;

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
    sse({
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
    });
  // Turns one upstream event into the bytes the client gets (or nothing).
  const transform = (event: StreamEvent): Uint8Array | null => {
    if ("done" in event) return DONE;
    const chunk = event.data;
    lastId = chunk.id ?? lastId;
    lastCreated = chunk.created ?? lastCreated;
    const reported = chunk.usage === undefined || chunk.usage === null ? null : convertOpenAIUsage(chunk.usage);
    if (reported) usage = reported;
    if (typeof chunk.model === "string") chunk.model = opts.publicModel;
    collectChoicesText(chunk.choices, "delta", delivered);
    if (!opts.clientWantsUsage) {
      if (Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage !== undefined) return null;
      delete chunk.usage;
    }
    return sse(chunk);
  };

  // The client can leave before the HTTP layer starts reading this stream (and would never cancel it): the
  // disconnect watcher's abort settles too. Settling twice is a no-op.
  opts.upstream.signal.addEventListener("abort", () => void settleLocal(499, "client_cancelled"), { once: true });

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          for (;;) {
            const next = pending ?? (await opts.events.next());
            pending = null;
            if (next.done) {
              // The upstream iterator ends after [DONE]; a stream that stopped without it was flagged as an error.
              // Settlement is tracked (drain() waits for it), so the end of the body does not wait for the database.
              void settleLocal(200, null);
              controller.close();
              return;
            }
            if ("done" in next.value && opts.clientWantsUsage && !usage && meter.delivered) {
              controller.enqueue(usageChunk(await localUsage()));
            }
            const bytes = transform(next.value);
            if (!bytes) continue;
            meter.markFirstByte();
            controller.enqueue(bytes);
            return;
          }
        } catch {
          // Aborted: the client left, and the abort listener settled. Nobody reads this stream any more.
          if (opts.upstream.signal.aborted) return;
          // Dropped or broken upstream after delivery began: bill what was delivered, tell the client in-band.
          void settleLocal(200, "upstream_error");
          opts.upstream.abort();
          controller.enqueue(
            sse({
              error: {
                message: "The upstream stream ended unexpectedly.",
                type: "api_error",
                code: "upstream_stream_interrupted",
                param: null,
                request_id: opts.requestId,
              },
            }),
          );
          controller.close();
        }
      },
      cancel() {
        opts.upstream.abort();
      },
    },
    // One event at a time: the upstream is read only as fast as the client takes it.
    { highWaterMark: 0 },
  );
}
