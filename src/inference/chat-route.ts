import { Hono } from "hono";
import type { Catalog, CatalogModel } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import { resolveModel } from "../metering/access.js";
import { countPromptTokens, countTextTokens, estimatePromptTokens } from "../metering/estimate.js";
import type { Metering } from "../metering/meter.js";
import type { Providers } from "../providers/registry.js";
import type { JsonResult, StreamEvent, StreamResult, UsageReport } from "../providers/types.js";
import { UpstreamError } from "../providers/types.js";
import { readJson } from "../server/body.js";
import type { AppEnv } from "../server/context.js";
import { respondStream, respondText } from "../server/respond.js";
import { toChatRequest, type ChatRequest } from "./chat-schema.js";
import { relayChatStream } from "./chat-stream.js";
import { collectChoicesText } from "./chat-text.js";
import { clientDisconnect, OVERHEAD_HEADER } from "./client.js";
import { applyEdits, findMembers } from "./json-members.js";

export interface ChatRouteDeps {
  config: Config;
  catalog: Catalog;
  providers: Providers;
  metering: Metering;
  bodyLimit: number;
}

type Attempt = { result: JsonResult } | { result: StreamResult; batches: AsyncIterator<StreamEvent[]>; first: IteratorResult<StreamEvent[]> };

const ROUTE = "/v1/chat/completions";

/** Completion text of a JSON answer, for the local count when the upstream reports no usage. */
function completionText(body: Record<string, unknown>): string {
  const parts: string[] = [];
  collectChoicesText(body.choices, "message", parts);
  return parts.join("");
}

/**
 * The answer as the client gets it: the upstream's text with the public model ID put in, serialised again only
 * when that edit would be ambiguous.
 */
function answerText(raw: string, body: Record<string, unknown>, publicModel: string): string {
  const model = findMembers(raw, ["model"])?.get("model");
  if (model) return applyEdits(raw, [{ start: model.valueStart, end: model.valueEnd, text: JSON.stringify(publicModel) }]);
  body.model = publicModel;
  return JSON.stringify(body);
}

/** POST /v1/chat/completions, JSON and SSE, through the metering path. */
export function chatRoutes(deps: ChatRouteDeps) {
  const { config, catalog, providers, metering } = deps;

  return new Hono<AppEnv>().post("/chat/completions", async (c) => {
    const startedAt = performance.now();
    const key = c.get("apiKey");
    const base = { requestId: c.get("requestId"), route: ROUTE, clientProtocol: "openai", key, startedAt, streamed: false };
    let body: ChatRequest | undefined;
    let model: CatalogModel;
    try {
      body = toChatRequest(await readJson(c, deps.bodyLimit));
      base.streamed = body.stream === true;
      model = resolveModel(catalog, config, key, body.model, "chat");
    } catch (err) {
      // Refusals before metering still get their row, so the user can find the request by its id.
      metering.logRejected({ ...base, modelId: body?.model ?? "" }, err);
      throw err;
    }
    const modelId = body.model;
    const extra = [body.tools, body.response_format];
    const countPrompt = () => countPromptTokens(body.messages, extra);
    const completionCap = body.max_completion_tokens ?? body.max_tokens ?? config.quota.default_completion_reserve;
    const meter = await metering.begin({
      ...base,
      model,
      estimate: { promptTokens: estimatePromptTokens(body.messages, extra), completionTokens: completionCap * (body.n ?? 1) },
      exactPromptTokens: countPrompt,
    });

    const abort = new AbortController();
    const stopWatching = clientDisconnect(c, abort);
    let attempt: Attempt;
    try {
      attempt = await meter.call(async (target) => {
        const call = providers.get(target.providerId)?.chatCompletions;
        if (!call) throw new UpstreamError("connect", null);
        const result = await call({ ...body, model: target.upstreamModel }, { target, signal: abort.signal });
        if (result.kind === "json") return { result };
        // Read the first events before committing to this target: a stream that fails before them still falls back.
        const batches = result.batches[Symbol.asyncIterator]();
        return { result, batches, first: await batches.next() };
      });
    } catch (err) {
      stopWatching();
      if (err instanceof UpstreamError && err.failure === "aborted") return c.body(null, 499 as never);
      throw err;
    }

    if ("batches" in attempt) {
      return respondStream(
        c,
        { "content-type": "text/event-stream; charset=utf-8", "x-accel-buffering": "no", [OVERHEAD_HEADER]: meter.overheadMs().toFixed(3) },
        relayChatStream({
          meter,
          publicModel: modelId,
          requestId: base.requestId,
          clientWantsUsage: body.stream_options?.include_usage === true,
          first: attempt.first,
          batches: attempt.batches,
          countPrompt,
          upstream: abort,
        }),
      );
    }

    stopWatching();
    const json = attempt.result.body;
    const text = answerText(attempt.result.raw, json, modelId);
    const counted = async (): Promise<UsageReport> => ({
      promptTokens: await countPrompt(),
      completionTokens: await countTextTokens(completionText(json)),
      cachedTokens: 0,
    });
    meter.markFirstByte();
    void meter.settle(attempt.result.usage ?? counted(), attempt.result.usage ? "upstream" : "estimated");
    return respondText(c, 200, text, { "content-type": "application/json", [OVERHEAD_HEADER]: meter.overheadMs().toFixed(3) });
  });
}
