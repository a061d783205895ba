import type { Context } from "hono";
import type { Catalog, CatalogModel } from "../catalog/catalog.js";
import type { Config, ModelConfig } from "../config/schema.js";
import { resolveModel } from "../metering/access.js";
import type { Meter, Metering } from "../metering/meter.js";
import type { Providers } from "../providers/registry.js";
import type { CallOptions, EventStream, JsonResult, ProviderAdapter, StreamEvent, StreamResult, Target } from "../providers/types.js";
import { UpstreamError } from "../providers/types.js";
import { readJson } from "../server/body.js";
import type { AppEnv } from "../server/context.js";
import { clientDisconnect } from "./client.js";

// The one request flow of every billed inference route (DESIGN.md §3): read and check the body, resolve the
// model, admit and hold (metering.begin), call the targets in order (meter.call), then hand the answer to the
// route, which delivers it and settles. A route says only what differs: its body, its estimate, which
// capability it calls and how it shapes the answer.

export interface InferenceDeps {
  config: Config;
  catalog: Catalog;
  providers: Providers;
  metering: Metering;
  bodyLimit: number;
}

/** What metering needs to know about a parsed request. */
export interface MeteredRequest {
  modelId: string;
  streamed: boolean;
  /** Cheap, conservative token estimates for admission and the hold. */
  estimate: { promptTokens: number; completionTokens: number };
  /** The tokenizer's prompt count (for the context limit near it, and for answers without usage). */
  countPrompt: () => Promise<number>;
}

/** A stream whose first events were read on the target that answered (so a stream failing before them fell back). */
export interface OpenedStream {
  result: StreamResult;
  /** The first batch (null: the stream ended before any event). */
  first: StreamEvent[] | null;
  /** The rest of the stream (result.batches). */
  batches: EventStream;
}

/** What the route's delivery gets: the answer, its meter, and the abort of the upstream request. */
export interface Delivery<B> {
  c: Context<AppEnv>;
  body: B;
  request: MeteredRequest;
  meter: Meter;
  upstream: AbortController;
}

export interface RouteSpec<B> {
  /** The route as logged (`/v1/embeddings`). */
  route: string;
  clientProtocol: string;
  kind: ModelConfig["kind"];
  /** Checks the body (a GatewayError with status and param on bad input). */
  parse(raw: unknown): B;
  describe(body: B, config: Config): MeteredRequest;
  /** Calls the upstream on one target; the capability (and any translation) is the route's choice. */
  call(adapter: ProviderAdapter, target: Target, body: B, options: CallOptions): Promise<JsonResult | StreamResult>;
  /** Delivers a JSON answer and settles its meter (the upstream call is over). */
  json(answer: JsonResult, delivery: Delivery<B>): Response | Promise<Response>;
  /** Delivers a stream; the relay settles the meter however the stream ends. */
  stream?(opened: OpenedStream, delivery: Delivery<B>): Response;
}

type Attempt = { json: JsonResult } | { stream: OpenedStream };

/** A handler running `spec` through the metering path. */
export function meteredHandler<B>(deps: InferenceDeps, spec: RouteSpec<B>) {
  const { config, catalog, providers, metering } = deps;

  return async (c: Context<AppEnv>): Promise<Response> => {
    const startedAt = performance.now();
    const key = c.get("apiKey");
    const base = { requestId: c.get("requestId"), route: spec.route, clientProtocol: spec.clientProtocol, key, startedAt, streamed: false };
    let body: B;
    let request: MeteredRequest | undefined;
    let model: CatalogModel;
    try {
      body = spec.parse(await readJson(c, deps.bodyLimit));
      request = spec.describe(body, config);
      base.streamed = request.streamed;
      model = resolveModel(catalog, config, key, request.modelId, spec.kind);
    } catch (err) {
      // Refusals before metering still get their row, so the user can find the request by its id.
      metering.logRejected({ ...base, modelId: request?.modelId ?? "" }, err);
      throw err;
    }
    const meter = await metering.begin({ ...base, model, estimate: request.estimate, exactPromptTokens: request.countPrompt });

    const upstream = new AbortController();
    const stopWatching = clientDisconnect(c, upstream);
    let attempt: Attempt;
    try {
      attempt = await meter.call(async (target): Promise<Attempt> => {
        const adapter = providers.get(target.providerId);
        if (!adapter) throw new UpstreamError("connect", null);
        const result = await spec.call(adapter, target, body, { target, signal: upstream.signal });
        if (result.kind === "json") return { json: result };
        if (!spec.stream) throw new UpstreamError("protocol", result.status);
        return { stream: { result, batches: result.batches, first: await result.batches.next() } };
      });
    } catch (err) {
      stopWatching();
      if (err instanceof UpstreamError && err.failure === "aborted") return c.body(null, 499 as never);
      throw err;
    }
    const delivery: Delivery<B> = { c, body, request, meter, upstream };
    if ("stream" in attempt) return spec.stream!(attempt.stream, delivery);
    stopWatching();
    return spec.json(attempt.json, delivery);
  };
}
