/** Raw requests to a mock upstream, for what the official SDKs hide: exact bytes, fault headers, bad bodies. */

export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export interface SseEvent {
  /** The `event:` line, when the vendor sends one. */
  event?: string;
  data: string;
}

/** Reads an SSE body to its end or until the connection breaks, returning the events seen. */
export async function readSse(res: Response): Promise<{ events: SseEvent[]; broken: boolean }> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let broken = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += value;
    }
  } catch {
    broken = true;
  }
  const events = text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const lines = block.split(/\r?\n/);
      const event = lines.find((l) => l.startsWith("event: "))?.slice("event: ".length);
      const data = lines
        .filter((l) => l.startsWith("data: "))
        .map((l) => l.slice("data: ".length))
        .join("\n");
      return event === undefined ? { data } : { event, data };
    });
  return { events, broken };
}
