import { describe, expect, it } from "vitest";
import { readAnswers } from "../../src/providers/systemone/read-answers.js";
import type { Question } from "../../src/providers/systemone/request-schema.js";

// The evaluator's answers are checked against the questions before delivery; an unusable answer is refused
// (the route turns that into a bad gateway), a usable one keeps the evaluator's rounded values.

const questions: Record<string, Question> = {
  n: { type: "noul" },
  c: { type: "choice", criteria: { yes: "it holds", no: { why: [1] }, maybe: null } },
  s: { type: "score", criteria: ["bad", null, { label: "good", weight: 1.5 }] },
};

const good = {
  n: { type: "noul", noul: 0.7312 },
  c: { type: "choice", choice: "no", confidence: 0.5, probabilities: { yes: 0.3333, no: 0.5, maybe: 0.1666 } },
  s: {
    type: "score",
    score: 1.4271,
    confidence: 0.61,
    probabilities: { 0: 0.1, 1: 0.29, 2: 0.61 },
    legend: { 0: "bad", 1: null, 2: { weight: 1.5, label: "good" } },
  },
};

type Answers = Record<string, Record<string, unknown>>;
const read = (answers: unknown, asked = questions) => readAnswers(asked, { model: "1.13.0", answers });
/** The answers of an accepted result (fails the test otherwise). */
function accepted(answers: unknown, asked = questions): Answers {
  const result = read(answers, asked);
  if (!result.ok) throw new Error(`refused: ${result.reason}`);
  return result.answers as unknown as Answers;
}
const withAnswer = (id: string, patch: Record<string, unknown>): Answers => ({
  ...good,
  [id]: { ...good[id as keyof typeof good], ...patch },
});

describe("readAnswers", () => {
  it("accepts complete answers and keeps the rounded values as sent (no renormalisation)", () => {
    expect(read(good)).toEqual({ ok: true, answers: good });
    // 0.3333 + 0.5 + 0.1666 = 0.9999: rounded, still accepted, still 0.9999.
    const c = accepted(good).c!;
    expect(Object.values(c.probabilities as object).reduce((a: number, b: number) => a + b, 0)).toBeCloseTo(0.9999, 10);
  });

  it("keeps only the spec's fields of each answer", () => {
    expect(accepted(withAnswer("n", { confidence: 0.9, debug: "internal", raw_logits: [1, 2] })).n).toEqual({ type: "noul", noul: 0.7312 });
  });

  it("accepts the boundaries: 0 and 1, a score of 0 and of the last level index", () => {
    expect(read(withAnswer("n", { noul: 0 })).ok).toBe(true);
    expect(read(withAnswer("n", { noul: 1 })).ok).toBe(true);
    expect(read(withAnswer("s", { score: 0 })).ok).toBe(true);
    expect(read(withAnswer("s", { score: 2 })).ok).toBe(true);
  });

  it("keeps question IDs and option names such as __proto__ as plain keys", () => {
    const asked = JSON.parse('{"__proto__":{"type":"choice","criteria":{"__proto__":"a","b":"b"}}}') as Record<string, Question>;
    const answers = JSON.parse(
      '{"__proto__":{"type":"choice","choice":"__proto__","confidence":0.6,"probabilities":{"__proto__":0.6,"b":0.4}}}',
    );
    const answer = accepted(answers, asked);
    expect(Object.keys(answer)).toEqual(["__proto__"]);
    expect(JSON.stringify(answer)).toBe(
      '{"__proto__":{"type":"choice","choice":"__proto__","confidence":0.6,"probabilities":{"__proto__":0.6,"b":0.4}}}',
    );
  });

  const invalid: [string, unknown][] = [
    ["no answers object", undefined],
    ["answers as an array", [good.n]],
    ["a missing answer", { n: good.n, c: good.c }],
    ["an extra answer", { ...good, x: good.n }],
    ["an answer that is no object", { ...good, n: 0.5 }],
    ["the wrong type", withAnswer("n", { type: "score" })],
    ["noul above 1", withAnswer("n", { noul: 1.01 })],
    ["noul below 0", withAnswer("n", { noul: -0.1 })],
    ["noul as a string", withAnswer("n", { noul: "0.5" })],
    ["noul missing", withAnswer("n", { noul: undefined })],
    ["a choice that is no option", withAnswer("c", { choice: "perhaps" })],
    ["a choice that is inherited, not an option", withAnswer("c", { choice: "toString" })],
    ["a choice without confidence", withAnswer("c", { confidence: undefined })],
    ["a choice confidence above 1", withAnswer("c", { confidence: 2 })],
    ["choice probabilities missing an option", withAnswer("c", { probabilities: { yes: 0.5, no: 0.5 } })],
    ["choice probabilities with an extra key", withAnswer("c", { probabilities: { yes: 0.3, no: 0.3, maybe: 0.3, other: 0.1 } })],
    ["a choice probability above 1", withAnswer("c", { probabilities: { yes: 1.5, no: 0, maybe: 0 } })],
    ["a choice probability that is null", withAnswer("c", { probabilities: { yes: null, no: 0.5, maybe: 0.5 } })],
    ["a score above the last level", withAnswer("s", { score: 2.01 })],
    ["a negative score", withAnswer("s", { score: -0.5 })],
    ["a score that is NaN-like", withAnswer("s", { score: "1" })],
    ["a score without confidence", withAnswer("s", { confidence: undefined })],
    ["score probabilities incomplete", withAnswer("s", { probabilities: { 0: 0.5, 1: 0.5 } })],
    ["score probabilities as an array", withAnswer("s", { probabilities: [0.1, 0.29, 0.61] })],
    ["a score without legend", withAnswer("s", { legend: undefined })],
    ["a legend missing a level", withAnswer("s", { legend: { 0: "bad", 1: null } })],
    ["a legend with another description", withAnswer("s", { legend: { 0: "bad", 1: null, 2: { label: "good", weight: 1 } } })],
    ["a legend that turns null into a string", withAnswer("s", { legend: { 0: "bad", 1: "null", 2: good.s.legend[2] } })],
  ];

  it.each(invalid)("refuses %s", (_, answers) => {
    const result = read(answers);
    expect(result.ok).toBe(false);
    expect((result as { reason: string }).reason).not.toMatch(/perhaps|toString/);
  });
});
