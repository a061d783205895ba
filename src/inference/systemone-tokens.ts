import { systemOneVersion } from "../billing/systemone.js";
import { errors } from "../errors.js";
import { countTextTokens, estimateTextTokens } from "../metering/estimate.js";
import type { SystemOneRequest } from "../providers/systemone/request-schema.js";

// The input of an evaluation in tokens, for the version limits, the plan's context limit, the hold and a bill
// without upstream usage (docs/billing.md, "Evaluation service"). What is counted, with the real tokenizer
// (o200k_base): the state (a string as its text, anything else as its compact JSON), and each question as its
// ID plus its compact JSON (`JSON.stringify` of the question object as sent).

export interface TokenLimits {
  /** The state and all questions together. */
  total: number;
  /** The state plus the longest question. */
  statePlusQuestion: number;
}

/** Model version 1.13 (any 1.13.x, and the alias 1.13 itself): 64k and 32k tokens, k = 1000. */
const LIMITS_1_13: TokenLimits = { total: 64_000, statePlusQuestion: 32_000 };

/**
 * The limits of an upstream model: the model's configured ones, else the version's own; null when neither
 * is known (a version the gateway has no limits for is checked by the evaluator alone).
 */
export function tokenLimitsFor(upstream: string, configured: TokenLimits | undefined): TokenLimits | null {
  if (configured) return configured;
  const version = systemOneVersion(upstream);
  return version === "1.13" || version.startsWith("1.13.") ? LIMITS_1_13 : null;
}

interface Part {
  param: string;
  texts: string[];
}

const tooMany = (param: string, message: string) => errors.unprocessable(message, param, "token_limit_exceeded");

export class EvaluationTokens {
  private readonly state: Part;
  private readonly questions: Part[];
  private exact: Promise<number> | undefined;

  constructor(request: SystemOneRequest) {
    this.state = { param: "state", texts: [typeof request.state === "string" ? request.state : JSON.stringify(request.state)] };
    this.questions = Object.entries(request.questions).map(([id, question]) => ({
      param: `questions.${id}`,
      texts: [id, JSON.stringify(question)],
    }));
  }

  private *texts(): Generator<string> {
    for (const part of [this.state, ...this.questions]) yield* part.texts;
  }

  /** Cheap and conservative (3 characters a token), for admission and the hold. */
  estimate(): number {
    let tokens = 0;
    for (const text of this.texts()) tokens += estimateTextTokens(text);
    return tokens;
  }

  /** The tokenizer's count of the whole input. */
  count(): Promise<number> {
    return (this.exact ??= (async () => {
      let tokens = 0;
      for (const text of this.texts()) tokens += await countTextTokens(text);
      return tokens;
    })());
  }

  /**
   * 422 `token_limit_exceeded` when the input is over a limit; exactly at a limit passes. Counting stops as
   * soon as a limit is certainly exceeded, and a text of no more UTF-8 bytes than a limit is not tokenized for
   * it (a token is at least one byte).
   */
  async check(limits: TokenLimits): Promise<void> {
    let bytes = 0;
    for (const text of this.texts()) bytes += Buffer.byteLength(text);
    if (bytes <= Math.min(limits.total, limits.statePlusQuestion)) return;
    const count = async (part: Part, cap: number) => {
      let tokens = 0;
      for (const text of part.texts) if (tokens <= cap) tokens += await countTextTokens(text, cap - tokens);
      return tokens;
    };
    const state = await count(this.state, limits.statePlusQuestion);
    if (state > limits.statePlusQuestion) {
      throw tooMany(
        "state",
        `The state alone is over ${limits.statePlusQuestion} tokens, the limit for the state plus the longest question.`,
      );
    }
    let total = state;
    for (const question of this.questions) {
      const tokens = await count(question, Math.min(limits.statePlusQuestion - state, limits.total - total));
      if (state + tokens > limits.statePlusQuestion) {
        throw tooMany(
          question.param,
          `The state (${state} tokens) plus this question is over the limit of ${limits.statePlusQuestion} tokens for the state plus the longest question.`,
        );
      }
      total += tokens;
      if (total > limits.total)
        throw tooMany("questions", `The state and the questions are over the limit of ${limits.total} tokens together.`);
    }
    this.exact = Promise.resolve(total);
  }
}
