import type { Config } from "../config/schema.js";
import { z } from "zod";
import { GatewayError, errors, type ErrorCode } from "../errors.js";
import { countTextTokens } from "../metering/estimate.js";
import { systemOnePricing } from "../metering/pricing.js";
import { InvalidAnswerError, answerSchema, readAnswers, type Answer } from "../providers/systemone/read-answers.js";
import type { OperationDescription } from "../openapi/operation.js";
import type { UsageReport } from "../providers/types.js";
import { UpstreamError } from "../providers/types.js";
import type { BodyBudget } from "../server/body-budget.js";
import { ours } from "../openapi/operation.js";
import { route } from "../server/route.js";
import { byokHeader } from "../metering/metered-operation.js";
import { METERED_ERROR_CODES } from "../metering/metered-errors.js";
import { systemOneRequestSchema } from "../providers/systemone/request-schema.js";
import { ERROR_CODES } from "../errors.js";
import { deliverJson } from "../metering/deliver.js";
import { meteredHandler, type InferenceDeps, type RouteSpec } from "../metering/metered-handler.js";
import { toSystemOneCall, upstreamBody, type SystemOneCall } from "./systemone-request.js";
import { EvaluationTokens, tokenLimitsFor } from "./systemone-tokens.js";
import { extended } from "../objects.js";

// The evaluation service (spec "the service request"): POST /v1/systemone and POST /native/v1/systemone, one
// handler on the metering path. JSON only; invalid input is 422 and never tried on another provider; the
// answer is checked against the questions before delivery (docs/api.md, "Evaluation service").

interface Evaluation extends SystemOneCall {
  tokens: EvaluationTokens;
}

/** Invalid input is 422 on this route (spec "Errors"); only the plan's context limit stays 400. */
export function evaluationStatus(status: number, code: ErrorCode): number {
  const invalid = (status === 400 && code !== "context_length_exceeded") || status === 404 || status === 415;
  return invalid ? 422 : status;
}

function unprocessable(err: GatewayError): GatewayError {
  const status = evaluationStatus(err.status, err.code);
  return status === err.status
    ? err
    : new GatewayError({ status, message: err.message, code: err.code, param: err.param, headers: err.headers });
}

/** The answer (`answerText` writes it by hand, without copying the answers). */
export const evaluationResponseSchema = z.object({
  model: z.string().meta({ description: "The model ID the client sent (an alias stays the alias)." }),
  answers: z.record(z.string(), answerSchema).meta({ description: "Keyed by the request's question IDs." }),
  usage: z.object({
    input_tokens: z.int(),
    output_tokens: z.int(),
    cost: z.number().optional().meta({ description: "The price in USD, on pay-as-you-go only." }),
  }),
});

/**
 * The client's answer: its own model ID (an alias stays the alias), the checked answers, integer usage, and for
 * pay-as-you-go the price in USD as a JSON number written from the exact decimal (never through a float).
 */
function answerText(model: string, answers: Record<string, Answer>, usage: UsageReport, cost: string | null): string {
  const usageText = `{"input_tokens":${usage.promptTokens},"output_tokens":${usage.completionTokens}${cost === null ? "" : `,"cost":${cost}`}}`;
  return `{"model":${JSON.stringify(model)},"answers":${JSON.stringify(answers)},"usage":${usageText}}`;
}

function evaluationSpec(path: string, config: Config, budget: BodyBudget): RouteSpec<Evaluation> {
  return {
    route: path,
    clientProtocol: "systemone",
    kind: "systemone",
    protocols: ["systemone"],
    body: { limit: config.systemone.max_body_bytes, budget },
    parse(raw, _c, text) {
      const call = toSystemOneCall(raw, text);
      return extended(call, { tokens: new EvaluationTokens(call.request) });
    },
    describe: (body) => ({
      modelId: body.request.model,
      streamed: false,
      estimate: { promptTokens: body.tokens.estimate(), completionTokens: 0 },
      countPrompt: () => body.tokens.count(),
      promptParam: null,
    }),
    async admit(body, model) {
      const configured = model.config.token_limits;
      const limits = tokenLimitsFor(
        model.config.upstream,
        configured && { total: configured.total, statePlusQuestion: configured.state_plus_question },
      );
      if (limits) await body.tokens.check(limits);
    },
    pricing: systemOnePricing,
    clientError: unprocessable,
    async call(adapter, target, body, options) {
      if (!adapter.evaluate) throw new UpstreamError("connect", null);
      const answer = await adapter.evaluate(upstreamBody(body, target.upstreamModel), options);
      const read = readAnswers(body.request.questions, answer.body);
      if (!read.ok) throw new InvalidAnswerError(answer.status, read.reason);
      return extended(answer, { body: { answers: read.answers } });
    },
    async json(answer, delivery) {
      const { body } = delivery;
      const answers = answer.body.answers as Record<string, Answer>;
      // Without upstream usage: the input as the tokenizer counts it, the output as the answers the client gets.
      const usage = answer.usage ?? {
        promptTokens: await body.tokens.count(),
        completionTokens: await countTextTokens(JSON.stringify(answers)),
        cachedTokens: 0,
      };
      const text = answerText(body.request.model, answers, usage, delivery.meter.clientCost(usage));
      return deliverJson(delivery, text, answer.usage, async () => usage);
    },
  };
}

export interface EvaluationDeps extends InferenceDeps {
  /** The process-wide budget of evaluation request bodies (`systemone.admission_budget_bytes`). */
  bodyBudget: BodyBudget;
}

const evaluationOperation = (path: string, operationId: string) =>
  ({
    method: "post",
    path,
    operationId,
    summary: "The evaluation service: answers the questions about one state",
    tag: "Evaluation",
    access: "apiKey",
    body: ours("EvaluationRequest", systemOneRequestSchema),
    ok: {
      status: 200,
      description: "The checked answers and the usage.",
      schema: ours("EvaluationResponse", evaluationResponseSchema),
      charged: true,
    },
    errors: [...METERED_ERROR_CODES, "token_limit_exceeded", "body_budget_exhausted"],
    headers: byokHeader,
    statusOf: (code) => evaluationStatus(ERROR_CODES[code].status, code),
  }) satisfies OperationDescription;

/**
 * POST /v1/systemone and /native/v1/systemone (the native SDK's prefix), reading bodies under the process's
 * body budget.
 */
export const evaluationRoutes = ["/v1/systemone", "/native/v1/systemone"].map((path) =>
  route<EvaluationDeps>(evaluationOperation(path, path === "/v1/systemone" ? "evaluate" : "evaluateNative"), (deps) =>
    meteredHandler(deps, evaluationSpec(path, deps.config, deps.bodyBudget)),
  ),
);

/** The removed /v1/evaluate answers 404 naming its replacement, whatever the method. */
export const removedEvaluateRoute = route(
  {
    method: "post",
    path: "/v1/evaluate",
    operationId: "evaluateRemoved",
    summary: "Removed: send the same body to POST /v1/systemone",
    tag: "Evaluation",
    access: "apiKey",
    errors: ["route_removed"],
    deprecated: true,
  },
  () => () => {
    throw errors.notFound("POST /v1/evaluate was removed; send the same body to POST /v1/systemone.", "route_removed");
  },
  { anyMethod: true },
);
