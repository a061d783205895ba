import type { z } from "zod";
import { GatewayConnectionError, GatewayHttpError } from "./errors.js";

// The one place worker-kit speaks HTTP: a JSON call to the gateway, its answer checked against the wire schema the
// gateway's own route uses (../wire/), its error envelope turned into a GatewayHttpError. Node's fetch (undici)
// keeps connections alive between calls.

export interface HttpOptions {
  /** The gateway's root, such as http://127.0.0.1:8080 (a trailing slash is ignored). */
  baseUrl: string;
  /** Per call; a call that takes longer fails as a retryable connection error. Default 30 s. */
  timeoutMs?: number;
  /** For tests and proxies; defaults to the global fetch. */
  fetch?: typeof fetch;
}

export interface Call<S extends z.ZodType> {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  headers: Record<string, string>;
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** The schema of the success answer. */
  answer: S;
  signal?: AbortSignal;
}

export interface Answer<T> {
  status: number;
  data: T;
  requestId: string | null;
}

export type HttpCaller = <S extends z.ZodType>(call: Call<S>) => Promise<Answer<z.infer<S>>>;

const DEFAULT_TIMEOUT_MS = 30_000;

export function createHttpCaller(options: HttpOptions): HttpCaller {
  const base = options.baseUrl.replace(/\/+$/, "");
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return async (call) => {
    const url = new URL(base + call.path);
    for (const [key, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    const headers: Record<string, string> = Object.assign({ accept: "application/json" }, call.headers);
    if (call.body !== undefined) headers["content-type"] = "application/json";
    let response: Response;
    let text: string;
    try {
      response = await doFetch(url, {
        method: call.method,
        headers,
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
        signal,
      });
      text = await response.text();
    } catch (err) {
      if (call.signal?.aborted) throw err;
      const where = withoutCredentials(base);
      if (timeout.aborted) throw new GatewayConnectionError(where, `timed out after ${timeoutMs} ms`, true, { cause: err });
      throw new GatewayConnectionError(where, causeOf(err) ?? "connection failed", false, { cause: err });
    }
    const requestId = response.headers.get("x-request-id");
    const json = parseJson(text);
    if (!response.ok) throw toHttpError(response, json, requestId, call);
    const parsed = call.answer.safeParse(json);
    if (!parsed.success) {
      // The gateway answered something its own wire schema does not describe: a version mismatch or a proxy in
      // between. It keeps the success status, so it is not retried as if the moment were at fault.
      throw new GatewayHttpError(
        response.status,
        "unexpected_answer",
        `${call.method} ${call.path}: the answer does not match the wire schema (${parsed.error.issues[0]?.message ?? "invalid"})`,
        null,
        requestId,
        null,
      );
    }
    return { status: response.status, data: parsed.data, requestId };
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The root as an error may show it: a user name or password in the URL is a secret (and fetch refuses it anyway). */
function withoutCredentials(base: string): string {
  try {
    const url = new URL(base);
    url.username = "";
    url.password = "";
    return url.href.replace(/\/+$/, "");
  } catch {
    return base;
  }
}

function causeOf(err: unknown): string | null {
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  return cause?.code ?? cause?.message ?? null;
}

function toHttpError(response: Response, json: unknown, requestId: string | null, call: { method: string; path: string }) {
  const retryAfter = response.headers.get("retry-after");
  const seconds = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) : null;
  const envelope = (json as { error?: { code?: unknown; message?: unknown; param?: unknown; request_id?: unknown } } | undefined)?.error;
  if (envelope && typeof envelope.code === "string" && typeof envelope.message === "string") {
    return new GatewayHttpError(
      response.status,
      envelope.code,
      envelope.message,
      typeof envelope.param === "string" ? envelope.param : null,
      typeof envelope.request_id === "string" ? envelope.request_id : requestId,
      seconds === null ? null : seconds * 1000,
    );
  }
  // Not the gateway's envelope (a proxy's page): report the status only, never the body.
  return new GatewayHttpError(
    response.status,
    `http_${response.status}`,
    `${call.method} ${call.path} answered ${response.status} without the gateway's error envelope`,
    null,
    requestId,
    seconds === null ? null : seconds * 1000,
  );
}
