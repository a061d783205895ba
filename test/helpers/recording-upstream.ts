import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll } from "vitest";
import { providerSchema, upstreamAnswerLimitsSchema } from "../../src/config/catalog-schema.js";
import type { ProviderConfig, UpstreamAnswerLimits } from "../../src/config/schema.js";
import { batchesOf } from "./async-iter.js";
import type { EventStream, ProviderAdapter, Target } from "../../src/providers/types.js";

// A throwaway upstream for adapter tests that only check the wire (paths, headers, bodies): it records every
// request and answers with whatever the test set. Behaviour of real protocols lives in the mock upstream.

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Answer {
  status: number;
  headers?: http.OutgoingHttpHeaders;
  body: string;
}

export interface RecordingUpstream {
  url: string;
  requests: RecordedRequest[];
  /** The next answers, in order; the last one repeats. */
  answers: Answer[];
  provider(overrides: Partial<Record<keyof ProviderConfig, unknown>>): ProviderConfig;
  close(): Promise<void>;
}

export const jsonAnswer = (body: object, status = 200): Answer => ({
  status,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});
export const sseAnswer = (body: string): Answer => ({ status: 200, headers: { "content-type": "text/event-stream" }, body });

export async function startRecordingUpstream(): Promise<RecordingUpstream> {
  const requests: RecordedRequest[] = [];
  const upstream: RecordingUpstream = {
    url: "",
    requests,
    answers: [jsonAnswer({})],
    provider: (overrides) => providerSchema.parse({ protocol: "openai", base_url: upstream.url, api_key: "provider-key", ...overrides }),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      const answer = upstream.answers.length > 1 ? upstream.answers.shift()! : upstream.answers[0]!;
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return upstream;
}

/** Every event of a stream result, flattened. */
export async function drain(batches: EventStream): Promise<unknown[]> {
  return (await batchesOf(batches)).flat();
}

export interface AdapterFixture {
  upstream: RecordingUpstream;
  adapter: ProviderAdapter;
  target: Target;
}

/** The default caps on JSON answers, with `overrides`. */
export const answerLimits = (overrides: Partial<UpstreamAnswerLimits> = {}): UpstreamAnswerLimits =>
  upstreamAnswerLimitsSchema.parse(overrides);

/**
 * Registers the hooks of an adapter test: a recording upstream, an adapter for a provider on it (base URL from
 * `baseUrl`), the target the calls go to, and a clean request list per test. Read the fields in beforeAll.
 */
export function useRecordingAdapter(
  create: (provider: ProviderConfig, limits: UpstreamAnswerLimits) => ProviderAdapter,
  protocol: ProviderConfig["protocol"],
  baseUrl: (url: string) => string,
  target: { providerId: string; upstreamModel: string },
  limits: UpstreamAnswerLimits = answerLimits(),
): AdapterFixture {
  const fixture = {} as AdapterFixture;
  beforeAll(async () => {
    fixture.upstream = await startRecordingUpstream();
    const provider = fixture.upstream.provider({ protocol, base_url: baseUrl(fixture.upstream.url) });
    fixture.adapter = create(provider, limits);
    fixture.target = { ...target, provider };
  });
  afterAll(async () => {
    await fixture.adapter?.close();
    await fixture.upstream?.close();
  });
  afterEach(() => {
    fixture.upstream.requests.length = 0;
  });
  return fixture;
}
