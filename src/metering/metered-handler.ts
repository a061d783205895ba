import { streamOutputCap } from "./relays/output-cap.js";
import type { Context } from "hono";
import type { Catalog, CatalogModel } from "../catalog/catalog.js";
import type { Config, ModelConfig, ProviderConfig } from "../config/schema.js";
import { GatewayError } from "../errors.js";
import { resolveModel, servingTargets } from "../catalog/model-access.js";
import type { Metering } from "./meter.js";
import type { Meter, MeterStart } from "./request-meter.js";
import { bodyModel, namedModel, type RowStart } from "./request-row.js";
import type { ApiKeyPrincipal } from "../auth/principals.js";
import { chatPricing, withRequestPack, type Pricing, type PricingFor } from "./pricing.js";
import type { Providers } from "../providers/registry.js";
import type { SafeDownloader } from "../providers/safe-download.js";
import type { CallOptions, EventStream, JsonResult, ProviderAdapter, StreamEvent, StreamResult, Target } from "../providers/types.js";
import { UpstreamError } from "../providers/types.js";
import { readJsonBody } from "../server/body.js";
import type { BodyBudget, BodyReservation } from "../server/body-budget.js";
import type { AppEnv } from "../server/context.js";
import { clientDisconnect } from "./client-disconnect.js";
import { readUpstreamKey } from "./upstream-key.js";
import { UpstreamAbort } from "../providers/upstream-abort.js";

// The one request flow of every billed route (docs/architecture.md, "Rules"): read and check the body, resolve the model, admit
// and hold (metering.begin), call the targets in order (meter.call), then hand the answer to the route, which
// delivers it and settles. A route says only what differs: its body, its estimate, which capability it calls and
// how it shapes the answer. The runner owns the meter's outcome: whatever a route's delivery throws, the hold is
// voided and the request logged exactly once.

export interface InferenceDeps {
  config: Config;
  catalog: Catalog;
  providers: Providers;
  metering: Metering;
  /** Fetches the image links upstreams answer with (SSRF-checked, capped): image delivery downloads with it. */
  download: SafeDownloader;
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
  /** The field a context-limit refusal names; `messages` when absent, null for a prompt made of several fields. */
  promptParam?: string | null;
  /** The output limit the request sets for each answer (max_tokens and its kin), if any: a stream's cap. */
  outputTokens?: number | null;
  /** Answers asked for (chat's `n`); 1 when absent. */
  choices?: number;
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
  upstream: UpstreamAbort;
  /** The output tokens after which a stream is ended (src/metering/relays/output-cap.ts); null: no cap. */
  outputCap: number | null;
}

export interface RouteSpec<B> {
  /** The route as logged (`/v1/embeddings`). */
  route: string;
  clientProtocol: string;
  kind: ModelConfig["kind"];
  /** The target protocols `call` can speak; a model's other targets are skipped (docs/api.md). */
  protocols: readonly ProviderConfig["protocol"][];
  /**
   * The route's own body cap, and the budget its bodies are read under; else `server.max_body_bytes` under the
   * request's body rules' budget (`server.body_budget_bytes`).
   */
  body?: { limit: number; budget: BodyBudget };
  /**
   * Reads the body (`value` for parse, `text` as sent); JSON unless the route says otherwise (multipart, or
   * nothing for a GET). Reads at most `limit` bytes under `reservation`.
   */
  read?(c: Context<AppEnv>, limit: number, reservation: BodyReservation | undefined): Promise<{ value: unknown; text: string }>;
  /**
   * Checks the body, and the path where it names part of the request (a GatewayError with status and param on
   * bad input); `text` is the body as sent.
   */
  parse(raw: unknown, c: Context<AppEnv>, text: string): B;
  /**
   * Where the request names its model, read when `parse` refuses it (`raw` is undefined when the body could not be
   * read), so the refusal's log row still shows the model asked for; the body's `model` unless the route says so.
   */
  modelNamed?(raw: unknown, c: Context<AppEnv>): unknown;
  describe(body: B, config: Config): MeteredRequest;
  /** Checks what depends on the resolved model (before anything is held). */
  admit?(body: B, model: CatalogModel): Promise<void>;
  /** How the charge is computed (it may depend on the body: images requested); chat's formula unless the route says otherwise. */
  pricing?: (...args: [...Parameters<PricingFor>, body: B]) => Pricing;
  /** The route's wording of a refusal (the evaluation service says 422 where others say 400, 404 or 415). */
  clientError?: (err: GatewayError) => GatewayError;
  /** Calls the upstream on one target; the capability (and any translation) is the route's choice. */
  call(adapter: ProviderAdapter, target: Target, body: B, options: CallOptions): Promise<JsonResult | StreamResult>;
  /**
   * Delivers a JSON answer and settles its meter (the upstream call is over). An UpstreamError thrown here (the
   * answer failed the route's checks: `invalid_output`) voids the hold and answers as that failure, with no
   * further target tried; anything else thrown voids the hold and answers 500.
   */
  json(answer: JsonResult, delivery: Delivery<B>): Response | Promise<Response>;
  /**
   * Delivers a stream; the relay settles the meter however the stream ends. A throw (or a rejection) before that
   * is handled as for json: a route may check the first events before anything is sent.
   */
  stream?(opened: OpenedStream, delivery: Delivery<B>): Response | Promise<Response>;
}

type Attempt = { json: JsonResult } | { stream: OpenedStream };

/** A handler running `spec` through the metering path. */
export function meteredHandler<B>(deps: InferenceDeps, spec: RouteSpec<B>) {
  const { config, catalog, providers, metering } = deps;

  const refusal = (err: unknown) => (err instanceof GatewayError && spec.clientError ? spec.clientError(err) : err);

  const read = spec.read ?? readJsonBody;

  async function handle(c: Context<AppEnv>, reservation: BodyReservation | undefined): Promise<Response> {
    const startedAt = performance.now();
    const key = c.get("apiKey");
    const base = rowStartOf(c, spec, key, startedAt);
    // Its model ID is filled in below; the request counter reads it once the answer is built.
    c.set("metered", base);
    let raw: unknown;
    let body: B;
    let request: MeteredRequest | undefined;
    let model: CatalogModel;
    let upstreamKey: string | undefined;
    let pricing: Pricing;
    try {
      upstreamKey = readUpstreamKey(c);
      const { value, text } = await read(c, spec.body?.limit ?? deps.bodyLimit, reservation);
      raw = value;
      body = spec.parse(value, c, text);
      request = spec.describe(body, config);
      base.streamed = request.streamed;
      base.modelId = request.modelId;
      const byok = upstreamKey !== undefined;
      model = servingTargets(resolveModel(catalog, config, key, request.modelId, spec.kind), spec.protocols, spec.route, byok);
      pricing = pricingOf(spec, model, key, config, byok, body);
      await spec.admit?.(body, model);
    } catch (err) {
      // Refusals before metering still get their row, so the user can find the request by its id, with the model
      // it asked for even when the body's checks refused it.
      if (base.modelId === "") base.modelId = namedModel(spec.modelNamed ? spec.modelNamed(raw, c) : bodyModel(raw));
      const refused = refusal(err);
      metering.logRejected(base, refused);
      throw refused;
    }
    const meter = await metering.begin(meterStartOf(base, request, model, pricing, spec.clientError, upstreamKey !== undefined));

    const upstream = new UpstreamAbort();
    const stopWatching = clientDisconnect(c, upstream);
    let attempt: Attempt;
    try {
      attempt = await meter.call((target) => attemptOn(spec, providers, target, body, upstream, upstreamKey));
    } catch (err) {
      stopWatching();
      if (err instanceof UpstreamError && err.failure === "aborted") return c.body(null, 499 as never);
      throw err;
    }
    const outputCap = request.streamed
      ? streamOutputCap(request.outputTokens, model.config.max_output_tokens, request.choices ?? 1, config.limits.stream_output)
      : null;
    const delivery: Delivery<B> = { c, body, request, meter, upstream, outputCap };
    try {
      const answered = deliverAnswer(spec, attempt, delivery, stopWatching);
      // Awaited only when it is a promise: a microtask per request is measurable on the hot path.
      return answered instanceof Response ? answered : await answered;
    } catch (err) {
      stopWatching();
      upstream.abort();
      // The answer never reached the client: nothing is charged, the request is logged once, as what it was.
      await meter.fail(err);
      throw err instanceof UpstreamError ? meter.toClient(err) : err;
    }
  }

  return underBodyBudget(spec.body?.budget, handle);
}

/** What is known of the request when it arrives; its model ID and whether it streams are filled in once it is read. */
function rowStartOf<B>(c: Context<AppEnv>, spec: RouteSpec<B>, key: ApiKeyPrincipal, startedAt: number): RowStart {
  return {
    requestId: c.get("requestId"),
    route: spec.route,
    clientProtocol: spec.clientProtocol,
    key,
    modelId: "",
    startedAt,
    streamed: false,
  };
}

/** The route's pricing (chat's unless it says otherwise), drawn from a request pack where the plan has one for the model. */
function pricingOf<B>(spec: RouteSpec<B>, model: CatalogModel, key: ApiKeyPrincipal, config: Config, byok: boolean, body: B): Pricing {
  const pricing = spec.pricing ? spec.pricing(model, key, config, byok, body) : chatPricing(model, key, config, byok);
  return withRequestPack(pricing, model, key, config, byok);
}

/** What the Meter starts from. A literal, not a spread of `base`: see src/objects.ts. */
function meterStartOf(
  base: RowStart,
  request: MeteredRequest,
  model: CatalogModel,
  pricing: Pricing,
  clientError: ((err: GatewayError) => GatewayError) | undefined,
  byok: boolean,
): MeterStart {
  return {
    requestId: base.requestId,
    route: base.route,
    clientProtocol: base.clientProtocol,
    key: base.key,
    startedAt: base.startedAt,
    streamed: base.streamed,
    model,
    modelId: request.modelId,
    estimate: request.estimate,
    exactPromptTokens: request.countPrompt,
    promptParam: request.promptParam,
    pricing,
    clientError,
    byok,
  };
}

/** One target's attempt: its JSON answer, or its stream with the first events read (so that a stream failing before them falls back). */
async function attemptOn<B>(
  spec: RouteSpec<B>,
  providers: Providers,
  target: Target,
  body: B,
  upstream: UpstreamAbort,
  apiKey: string | undefined,
): Promise<Attempt> {
  const adapter = providers.get(target.providerId);
  if (!adapter) throw new UpstreamError("connect", null);
  const result = await spec.call(adapter, target, body, { target, signal: upstream, apiKey });
  if (result.kind === "json") return { json: result };
  if (!spec.stream) throw new UpstreamError("protocol", result.status);
  return { stream: { result, batches: result.batches, first: await result.batches.next() } };
}

/** The route's delivery of the answer. A stream's relay takes over watching the client; a JSON answer no longer needs it. */
function deliverAnswer<B>(
  spec: RouteSpec<B>,
  attempt: Attempt,
  delivery: Delivery<B>,
  stopWatching: () => void,
): Response | Promise<Response> {
  if ("stream" in attempt) return spec.stream!(attempt.stream, delivery);
  stopWatching();
  return spec.json(attempt.json, delivery);
}

/**
 * `handle` under a reservation of the route's own body budget, else the request's body rules' one. The body's bytes
 * stay reserved until the answer is built: the parse and the text live that long.
 */
function underBodyBudget(
  own: BodyBudget | undefined,
  handle: (c: Context<AppEnv>, reservation: BodyReservation | undefined) => Promise<Response>,
): (c: Context<AppEnv>) => Promise<Response> {
  return async (c) => {
    const budget = own ?? c.get("bodyRules")?.budget;
    if (!budget) return handle(c, undefined);
    const reservation = budget.reserve();
    try {
      return await handle(c, reservation);
    } finally {
      reservation.release();
    }
  };
}
