// The one reader of server-sent events in the tests: the translators' frames, and the bodies of the gateway and
// the mock upstream, whole or one event at a time. Every event keeps its `event:` name and its data, so a test
// checks whichever it cares about.

/** One event: its `event:` name when the stream names its events (Anthropic, OpenAI Responses), and its data. */
export interface SseEvent {
  event?: string;
  data: string;
}

/** A blank line ends an event; servers may end lines with CRLF. */
const EVENT_END = /\r?\n\r?\n/;

/**
 * An event's fields; one without data is no frame the gateway or the mock upstream ever writes, except a block of
 * comments only (the gateway's charge comment, docs/api.md "Charges"), which SSE clients skip: null, its comments
 * kept in `comments`.
 */
function parseEvent(block: string, comments: string[]): SseEvent | null {
  let event: string | undefined;
  const data: string[] = [];
  const lines = block.split(/\r?\n/);
  if (lines.every((line) => line.startsWith(":"))) {
    for (const line of lines) comments.push(line.slice(1).trim());
    return null;
  }
  for (const line of lines) {
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (data.length === 0) throw new Error(`SSE event without data: ${JSON.stringify(block)}`);
  return event === undefined ? { data: data.join("\n") } : { event, data: data.join("\n") };
}

/**
 * Text fed in as it arrives → the events it ended. An event the text ends inside is an error at the end (a
 * client drops it), so a writer that forgets the blank line fails the test rather than losing its last event.
 */
function sseParser(comments: string[] = []) {
  let rest = "";
  return {
    feed(text: string): SseEvent[] {
      const blocks = (rest + text).split(EVENT_END);
      rest = blocks.pop()!;
      return blocks.filter((b) => b.trim() !== "").flatMap((b) => parseEvent(b, comments) ?? []);
    },
    end(): void {
      if (rest.trim() !== "") throw new Error(`SSE text ends inside an event: ${JSON.stringify(rest)}`);
    },
  };
}

/** SSE text as the translators write it → its events (name and parsed data), in order. */
export function parseFrames(frames: string[]): { event: string | undefined; data: Record<string, unknown> }[] {
  const parser = sseParser();
  const events = parser.feed(frames.join(""));
  parser.end();
  return events.map(({ event, data }) => ({ event, data: JSON.parse(data) as Record<string, unknown> }));
}

/**
 * Reads a body one event at a time: the next event, or null at the end of the body. A connection that breaks
 * rejects, unless `broke` is given: then it is called, and the events end there (an event the break cut short
 * is dropped, as a client drops it).
 */
export function sseEvents(res: Response, broke?: () => void, comments?: string[]): () => Promise<SseEvent | null> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const parser = sseParser(comments);
  const ready: SseEvent[] = [];
  return async () => {
    while (ready.length === 0) {
      const chunk = await reader.read().catch((err: unknown) => {
        if (!broke) throw err;
        broke();
        return null;
      });
      if (chunk === null) return null;
      if (chunk.done) {
        parser.end();
        return null;
      }
      ready.push(...parser.feed(decoder.decode(chunk.value, { stream: true })));
    }
    return ready.shift()!;
  };
}

/** Reads an SSE body to its end or until the connection breaks, returning the events and comments seen. */
export async function readSse(res: Response): Promise<{ events: SseEvent[]; broken: boolean; comments: string[] }> {
  let broken = false;
  const comments: string[] = [];
  const next = sseEvents(res, () => (broken = true), comments);
  const events: SseEvent[] = [];
  for (let event = await next(); event !== null; event = await next()) events.push(event);
  return { events, broken, comments };
}

/** The charge a stream's comment names (`: x-gateway-charge=N`), or undefined. */
export function chargeComment(comments: readonly string[]): { units: bigint; usd: string | null } | undefined {
  for (const comment of comments) {
    const match = /^x-gateway-charge=(\d+)(?: x-gateway-charge-usd=(\S+))?$/.exec(comment);
    if (match) return { units: BigInt(match[1]!), usd: match[2] ?? null };
  }
  return undefined;
}
