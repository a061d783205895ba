import OpenAI, { APIError } from "openai";
import { clientLoops } from "./client-loops.js";

// Chat clients for the in-process ledger tests (ledger-sql-faults): each sends chat completions in a row to its
// gateway until stopped, JSON through the official OpenAI SDK or a stream through fetch (whose raw text shows
// whether it reached `data: [DONE]`), and records what it saw. No retries: every answer is the gateway's own.

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

/** What one request came to, as its client saw it. Times are performance.now(). */
export interface ChatOutcome {
  client: number;
  gateway: number;
  user: number;
  kind: "json" | "stream";
  startedAt: number;
  endedAt: number;
  /** 0: no answer (a connection dropped, a hang). */
  status: number;
  requestId: string | null;
  /** Received in full: a 200 JSON body with its usage, or a stream through `data: [DONE]` with its usage chunk. */
  completed: boolean;
  usage?: ChatUsage;
  /**
   * Whether the request's charge was found committed once the client had the whole answer (asked only then, so a
   * commit just after the answer counts too: false means certainly after).
   */
  chargedOnReceipt?: boolean;
  /** An error answer's envelope code (or a stream's in-band error event's) and Retry-After. */
  errorCode?: string | null;
  retryAfter?: string | null;
  error?: string;
}

export interface ChatLoadOptions {
  /** The gateways' root URLs. */
  urls: string[];
  /** One API key per user; client `c` is user `c % keys.length`. */
  keys: string[];
  clients: number;
  gatewayOf(client: number): number;
  streams(client: number): boolean;
  model: string;
  maxTokens: number;
  /** Pause between two requests of a client. */
  pauseMs: number;
  /** An answer slower than this is a hang (status 0). */
  hangMs: number;
  /** Whether the request's charge is committed now; asked the moment an answer is complete. */
  chargedNow(requestId: string): Promise<boolean>;
}

export interface ChatLoad {
  outcomes: ChatOutcome[];
  /** Asks the clients to stop after their current request; resolves when each has. */
  stop(): Promise<void>;
}

export function startChatLoad(opts: ChatLoadOptions): ChatLoad {
  const outcomes: ChatOutcome[] = [];
  const sdks = opts.keys.map((key) =>
    opts.urls.map((url) => new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0, timeout: opts.hangMs })),
  );

  async function send(client: number, n: number): Promise<ChatOutcome> {
    const gateway = opts.gatewayOf(client);
    const user = client % opts.keys.length;
    const kind = opts.streams(client) ? "stream" : "json";
    const out: ChatOutcome = {
      client,
      gateway,
      user,
      kind,
      startedAt: performance.now(),
      endedAt: 0,
      status: 0,
      requestId: null,
      completed: false,
    };
    const messages = [{ role: "user" as const, content: `Client ${client}, request ${n}: say something short.` }];
    try {
      if (kind === "json") {
        const { data, response } = await sdks[user]![gateway]!.chat.completions.create({
          model: opts.model,
          messages,
          max_tokens: opts.maxTokens,
        }).withResponse();
        out.status = response.status;
        out.requestId = response.headers.get("x-request-id");
        out.usage = data.usage;
        out.completed = response.status === 200 && data.usage !== undefined;
      } else {
        await stream(out, messages);
      }
    } catch (err) {
      if (err instanceof APIError && err.status !== undefined) {
        out.status = err.status;
        out.requestId = err.headers?.get("x-request-id") ?? null;
        out.errorCode = typeof err.code === "string" ? err.code : null;
        out.retryAfter = err.headers?.get("retry-after") ?? null;
      }
      out.error = err instanceof Error ? `${err.constructor.name}: ${err.message}` : String(err);
    } finally {
      out.endedAt = performance.now();
    }
    if (out.completed) out.chargedOnReceipt = await opts.chargedNow(out.requestId!);
    return out;
  }

  async function stream(out: ChatOutcome, messages: { role: "user"; content: string }[]) {
    const res = await fetch(`${opts.urls[out.gateway]}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${opts.keys[out.user]}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: opts.model,
        messages,
        max_tokens: opts.maxTokens,
        stream: true,
        stream_options: { include_usage: true },
      }),
      signal: AbortSignal.timeout(opts.hangMs),
    });
    out.status = res.status;
    out.requestId = res.headers.get("x-request-id");
    const text = await res.text();
    if (res.status !== 200) {
      out.errorCode = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null;
      out.retryAfter = res.headers.get("retry-after");
      return;
    }
    // Comment frames (`: …`) are not events.
    const events = text.split("\n\n").filter((e) => e.startsWith("data: "));
    const chunks = events
      .filter((e) => e !== "data: [DONE]")
      .map((e) => JSON.parse(e.slice(6)) as { usage?: ChatUsage | null; error?: { code?: string | null } });
    out.usage = chunks.find((c) => c.usage)?.usage ?? undefined;
    out.completed = events.at(-1) === "data: [DONE]" && out.usage !== undefined;
    // A stream that cannot go on ends with an in-band error event instead of [DONE].
    const error = chunks.find((c) => c.error)?.error;
    if (error) out.errorCode = error.code ?? null;
  }

  const loops = clientLoops({ clients: opts.clients, pauseMs: opts.pauseMs }, async (client, n) => {
    outcomes.push(await send(client, n));
  });
  return { outcomes, stop: loops.stop };
}
