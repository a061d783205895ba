import { z } from "zod";
import { identifier } from "@model-gateway/worker-kit/wire/text";
import { countTextTokens, estimateTextTokens } from "../metering/estimate.js";
import { UpstreamError } from "../providers/types.js";
import { validate } from "../server/body.js";
import { vendor } from "../openapi/operation.js";
import { route } from "../server/route.js";
import { meteredOperation } from "../metering/metered-operation.js";
import { deliverJson, deliverRelayed } from "../metering/deliver.js";
import { localUsage } from "../metering/estimate.js";
import { withPublicModel } from "../metering/public-model.js";
import { meteredHandler, type InferenceDeps, type RouteSpec } from "../metering/metered-handler.js";
import { responsesCharge } from "../metering/relays/charge-frames.js";
import { relayResponses } from "../metering/relays/responses-relay.js";
import { extended } from "../objects.js";

// POST /v1/responses (spec "Responses request"): `model` and `input` (any JSON value) required, everything
// else (tools, instructions, reasoning, …) forwarded untouched, as for chat. Billed like chat on the usage of
// the answer, or of a stream's terminal event (docs/billing.md).

const responsesRequestSchema = z.looseObject({
  model: identifier(),
  input: z.unknown().refine((v) => v !== undefined && v !== null && v !== "", "input is required"),
  instructions: z.string().nullish(),
  stream: z.boolean().nullish(),
  max_output_tokens: z.int().positive().nullish(),
});
type ResponsesRequest = z.infer<typeof responsesRequestSchema>;

/** The prompt as the gateway counts it: the instructions and the input (its JSON unless it is plain text). */
function promptText(body: ResponsesRequest): string {
  const input = typeof body.input === "string" ? body.input : JSON.stringify(body.input);
  return body.instructions ? `${body.instructions}\n${input}` : input;
}

/** What an answer's output says (text, refusals, function calls): the local count when there is no usage. */
function outputText(output: unknown): string {
  const parts: string[] = [];
  for (const item of Array.isArray(output) ? output : []) {
    const it = item as Record<string, unknown> | null;
    if (it?.type === "function_call") parts.push(String(it.name ?? ""), String(it.arguments ?? ""));
    for (const part of Array.isArray(it?.content) ? it.content : []) {
      const p = part as Record<string, unknown> | null;
      if (typeof p?.text === "string") parts.push(p.text);
      if (typeof p?.refusal === "string") parts.push(p.refusal);
    }
  }
  return parts.join("");
}

const responses: RouteSpec<ResponsesRequest> = {
  route: "/v1/responses",
  clientProtocol: "openai",
  protocols: ["openai"],
  kind: "chat",
  parse: (raw) => validate(responsesRequestSchema, raw),
  describe(body, config) {
    const prompt = promptText(body);
    return {
      modelId: body.model,
      streamed: body.stream === true,
      estimate: {
        promptTokens: estimateTextTokens(prompt),
        completionTokens: body.max_output_tokens ?? config.quota.default_completion_reserve,
      },
      countPrompt: () => countTextTokens(prompt),
      outputTokens: body.max_output_tokens,
    };
  },
  call(adapter, target, body, options) {
    if (!adapter.responses) throw new UpstreamError("connect", null);
    return adapter.responses(extended(body, { model: target.upstreamModel }), options);
  },
  json(answer, delivery) {
    const { body, request } = delivery;
    return deliverJson(delivery, withPublicModel(answer, body.model), answer.usage, () =>
      localUsage(request.countPrompt, outputText(answer.body.output)),
    );
  },
  stream(opened, delivery) {
    const { body, request } = delivery;
    return deliverRelayed(delivery, opened, relayResponses(body.model, request.countPrompt), responsesCharge);
  },
};

/** POST /v1/responses, JSON and SSE, through the metering path. */
export const responsesRoute = route<InferenceDeps>(
  meteredOperation("Inference", {
    method: "post",
    path: "/v1/responses",
    operationId: "createResponse",
    summary: "OpenAI responses",
    body: vendor("openai", "CreateResponse"),
    ok: {
      status: 200,
      description: "The response; with `stream: true`, its events as server-sent events.",
      schema: vendor("openai", "Response"),
      events: vendor("openai", "ResponseStreamEvent"),
    },
  }),
  (deps) => meteredHandler(deps, responses),
);
