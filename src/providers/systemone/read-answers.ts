import { isDeepStrictEqual } from "node:util";
import { z } from "zod";
import { asObject } from "../json-guards.js";
import { UpstreamError } from "../types.js";
import type { Question } from "./request-schema.js";

// The evaluator's answers, checked against the questions before anything reaches the client (spec "the
// service request"): every question answered with its own type; `noul` a probability; `choice` one of the
// options with `confidence` and probabilities over exactly the options; `score` fractional within [0, last
// level index] with `confidence`, probabilities over exactly the level indices and a `legend` repeating each
// level's JSON description. Values are kept as the evaluator rounded them: nothing is renormalised, so
// probabilities need not add up to exactly 1.

const probabilities = z.record(z.string(), z.number()).meta({ description: "Probability per option or level index." });

/** One answer as the client gets it (the API description's `EvaluationAnswer`). */
export const answerSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("noul"), noul: z.number().meta({ description: "The probability of true, in [0, 1]." }) }),
  z.object({ type: z.literal("choice"), choice: z.string(), confidence: z.number(), probabilities }),
  z.object({
    type: z.literal("score"),
    score: z.number().meta({ description: "Fractional, within [0, last level index]." }),
    confidence: z.number(),
    probabilities,
    legend: z.record(z.string(), z.unknown()).meta({ description: "Each level index's description, as sent." }),
  }),
]);

export type Answer = z.infer<typeof answerSchema>;

/** The answers keyed by question ID, or why they are unusable (no client data in the reason: it is logged). */
export type ReadAnswers = { ok: true; answers: Record<string, Answer> } | { ok: false; reason: string };

class InvalidAnswer extends Error {}

const fail = (reason: string): never => {
  throw new InvalidAnswer(reason);
};

function within(value: unknown, max: number, what: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > max) fail(`${what} is not a number in [0, ${max}]`);
  return value as number;
}

/** An object with exactly `keys`, each a probability; kept as sent (own keys only, `__proto__` included). */
function distribution(value: unknown, keys: readonly string[], what: string): Record<string, number> {
  const map = asObject(value) ?? fail(`${what} has no probabilities`);
  const own = Object.keys(map);
  if (own.length !== keys.length || !keys.every((key) => Object.hasOwn(map, key))) fail(`${what} has no complete probabilities`);
  for (const key of own) within(map[key], 1, `a probability of ${what}`);
  return map as Record<string, number>;
}

const levelKeys = (levels: number) => Array.from({ length: levels }, (_, i) => String(i));

function readAnswer(question: Question, value: unknown): Answer {
  const answer = asObject(value) ?? fail("an answer is not an object");
  if (answer.type !== question.type) fail(`the answer of a ${question.type} question has another type`);
  switch (question.type) {
    case "noul":
      return { type: "noul", noul: within(answer.noul, 1, "noul") };
    case "choice": {
      const options = Object.keys(question.criteria);
      const choice = answer.choice;
      if (typeof choice !== "string" || !Object.hasOwn(question.criteria, choice)) fail("choice is not one of the options");
      return {
        type: "choice",
        choice: choice as string,
        confidence: within(answer.confidence, 1, "the confidence of a choice"),
        probabilities: distribution(answer.probabilities, options, "a choice"),
      };
    }
    case "score": {
      const levels = question.criteria.length;
      const keys = levelKeys(levels);
      const legend = asObject(answer.legend) ?? fail("a score has no legend");
      if (
        Object.keys(legend).length !== levels ||
        !keys.every((key, i) => Object.hasOwn(legend, key) && isDeepStrictEqual(legend[key], question.criteria[i]))
      ) {
        fail("the legend of a score does not repeat the level descriptions");
      }
      return {
        type: "score",
        score: within(answer.score, levels - 1, "score"),
        confidence: within(answer.confidence, 1, "the confidence of a score"),
        probabilities: distribution(answer.probabilities, keys, "a score"),
        legend,
      };
    }
  }
}

/** An unusable answer: a bad gateway like any invalid answer (the next target may be tried); its reason names the rule. */
export class InvalidAnswerError extends UpstreamError {
  constructor(status: number, reason: string) {
    super("protocol", status);
    this.message = `invalid evaluation answer: ${reason}`;
  }
}

/** Checks the evaluator's `answers` against the questions asked; the result holds only the spec's fields. */
export function readAnswers(questions: Record<string, Question>, body: Record<string, unknown>): ReadAnswers {
  try {
    const answers = asObject(body.answers) ?? fail("the answer has no answers object");
    const ids = Object.keys(questions);
    if (Object.keys(answers).length !== ids.length || !ids.every((id) => Object.hasOwn(answers, id))) {
      fail("the answered question IDs are not the ones asked");
    }
    // fromEntries defines own properties, so a question ID such as "__proto__" stays a plain key.
    return { ok: true, answers: Object.fromEntries(ids.map((id) => [id, readAnswer(questions[id]!, answers[id])])) };
  } catch (err) {
    if (err instanceof InvalidAnswer) return { ok: false, reason: err.message };
    throw err;
  }
}
