import { Pool, errors as undiciErrors, type Dispatcher } from "undici";
import type { ProviderConfig } from "../config/schema.js";
import { networkFailureOf } from "./network-failure.js";
import { UpstreamError, type CallOptions } from "./types.js";
import { extended } from "../objects.js";
import type { UpstreamSignal } from "./upstream-abort.js";

/** One keep-alive pool per provider, with its connect timeout; per-request timeouts come from the config too. */
export function createPool(provider: ProviderConfig): Pool {
  return new Pool(new URL(provider.base_url).origin, {
    connections: provider.max_connections,
    keepAliveTimeout: 30_000,
    connect: { timeout: provider.timeouts.connect_ms },
  });
}

/** `{base_url}` + path, keeping the base URL's own path (`/v1`). */
function upstreamPath(provider: ProviderConfig, path: string): string {
  return `${new URL(provider.base_url).pathname.replace(/\/$/, "")}${path}`;
}

/** A delay (seconds, or ms for retry-after-ms; the OpenAI SDK also reads fractions). */
const DELAY = /^\d{1,10}(\.\d{1,3})?$/;
/** RFC 9110 IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`. */
const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

const RETRY_HEADERS = {
  "retry-after": (v: string) => DELAY.test(v) || HTTP_DATE.test(v),
  "retry-after-ms": (v: string) => DELAY.test(v),
} as const;

function retryHeaders(headers: Dispatcher.ResponseData["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, wellFormed] of Object.entries(RETRY_HEADERS)) {
    const value = headers[name];
    // Only well-formed values pass: a number of seconds/ms or an HTTP date, never arbitrary upstream text
    // (a character class such as [\w -] would let words like an upstream's internal detail through).
    if (typeof value === "string" && wellFormed(value.trim())) out[name] = value.trim();
  }
  return out;
}

/** Maps undici's failures to the gateway's kinds; the original error (may name hosts) is not kept, only its kind. */
export function classifyError(err: unknown, signal: UpstreamSignal): UpstreamError {
  if (err instanceof UpstreamError) return err;
  if (signal.aborted) return new UpstreamError("aborted", null);
  const network = networkFailureOf(err);
  if (
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    err instanceof undiciErrors.ConnectTimeoutError
  ) {
    return new UpstreamError("timeout", null, {}, network);
  }
  return new UpstreamError("connect", null, {}, network);
}

interface PostOptions {
  pool: Pool;
  provider: ProviderConfig;
  /** The full request path, from upstreamPath(). */
  path: string;
  /** Every request header, content-type included. */
  headers: Record<string, string>;
  /** JSON text to POST; null for a GET. */
  body: string | null;
  signal: UpstreamSignal;
}

/** POSTs JSON (or GETs); a non-2xx answer becomes an UpstreamError after its body is discarded unread. */
async function postJson(opts: PostOptions): Promise<Dispatcher.ResponseData> {
  let res: Dispatcher.ResponseData;
  try {
    res = await opts.pool.request({
      method: opts.body === null ? "GET" : "POST",
      path: opts.path,
      headers: opts.headers,
      body: opts.body,
      signal: opts.signal,
      headersTimeout: opts.provider.timeouts.first_byte_ms,
      bodyTimeout: opts.provider.timeouts.idle_ms,
    });
  } catch (err) {
    throw classifyError(err, opts.signal);
  }
  if (res.statusCode >= 200 && res.statusCode < 300) return res;
  await res.body.dump().catch(() => {});
  throw new UpstreamError("status", res.statusCode, retryHeaders(res.headers));
}

/** A protocol's request headers for a key: the provider's (worked out once) or a client's own for one request. */
export type HeadersFor = (apiKey: string, stream: boolean) => Record<string, string>;

/** What requests to one endpoint of one provider need besides their body; built once per provider. */
export interface Endpoint {
  pool: Pool;
  provider: ProviderConfig;
  /** The request path, base URL path included. */
  path: string;
  headersFor: HeadersFor;
  /** headersFor(provider.api_key, …), kept: header objects and URL parsing are on the hot path. */
  headers: { json: Record<string, string>; stream: Record<string, string> };
  /** The most bytes of a JSON answer read from this endpoint: its capability's `limits.upstream_answer_bytes`. */
  maxAnswerBytes: number;
}

export function createEndpoint(
  pool: Pool,
  provider: ProviderConfig,
  path: string,
  headersFor: HeadersFor,
  maxAnswerBytes: number,
): Endpoint {
  return {
    pool,
    provider,
    path: upstreamPath(provider, path),
    headersFor,
    headers: { json: headersFor(provider.api_key, false), stream: headersFor(provider.api_key, true) },
    maxAnswerBytes,
  };
}

/**
 * POSTs `body` to the endpoint (`suffix` appended to its path) with the provider's key, or the request's own.
 * A string body is JSON text already and is sent as it is.
 */
export function postToEndpoint(
  endpoint: Endpoint,
  body: unknown,
  options: CallOptions,
  stream: boolean,
  suffix = "",
): Promise<Dispatcher.ResponseData> {
  const headers = options.apiKey === undefined ? endpoint.headers[stream ? "stream" : "json"] : endpoint.headersFor(options.apiKey, stream);
  return postJson({
    pool: endpoint.pool,
    provider: endpoint.provider,
    path: endpoint.path + suffix,
    // The provider's own headers win: a client header never replaces a credential or the API version.
    headers: options.clientHeaders ? extended(options.clientHeaders, headers) : headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal: options.signal,
  });
}

/** GETs `{endpoint path}{suffix}` with the provider's key (a job's status); answered like a POST. */
export function getFromEndpoint(endpoint: Endpoint, options: CallOptions, suffix: string): Promise<Dispatcher.ResponseData> {
  return postJson({
    pool: endpoint.pool,
    provider: endpoint.provider,
    path: endpoint.path + suffix,
    headers: options.apiKey === undefined ? endpoint.headers.json : endpoint.headersFor(options.apiKey, false),
    body: null,
    signal: options.signal,
  });
}
