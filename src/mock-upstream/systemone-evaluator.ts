import { createHash } from "node:crypto";
import { digestOf } from "./mock-text.js";

/**
 * The mock evaluator's answers, pure and deterministic (docs/mock-upstream.md, "Evaluation protocol"): each
 * question's answer derives from sha256 of the model, the state, its ID and the question alone, so a question
 * gets the same answer whatever it is asked with. Probabilities are rounded to 4 decimals and not renormalised
 * afterwards, so they may add up to 0.9999 or 1.0001, as a real evaluator's rounded output does.
 */

export interface MockQuestion {
  type: "noul" | "choice" | "score";
  criteria?: unknown;
}

const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

/** `count` bytes of the digest's counter-mode stream, each 1..256 (never a zero weight). */
function weights(seed: Buffer, count: number): number[] {
  const out: number[] = [];
  for (let block = 0; out.length < count; block++) {
    const bytes = createHash("sha256").update(seed).update(String(block)).digest();
    for (let i = 0; i < bytes.length && out.length < count; i++) out.push(bytes[i]! + 1);
  }
  return out;
}

/** Rounded probabilities from the weights, and the index of the largest (the first one on a tie). */
function distribution(seed: Buffer, count: number): { probabilities: number[]; top: number } {
  const w = weights(seed, count);
  const sum = w.reduce((a, b) => a + b, 0);
  const probabilities = w.map((x) => round4(x / sum));
  const top = probabilities.indexOf(Math.max(...probabilities));
  return { probabilities, top };
}

export function answerOf(model: string, state: unknown, id: string, question: MockQuestion): Record<string, unknown> {
  const seed = digestOf([model, state, id, question]);
  if (question.type === "noul") return { type: "noul", noul: round4(seed.readUInt16BE(0) / 0xffff) };
  if (question.type === "choice") {
    const options = Object.keys(question.criteria as object);
    const { probabilities, top } = distribution(seed, options.length);
    return {
      type: "choice",
      choice: options[top],
      confidence: probabilities[top],
      // fromEntries keeps an option named "__proto__" as a plain key.
      probabilities: Object.fromEntries(options.map((option, i) => [option, probabilities[i]])),
    };
  }
  const levels = question.criteria as unknown[];
  const { probabilities, top } = distribution(seed, levels.length);
  const expected = probabilities.reduce((sum, p, i) => sum + p * i, 0);
  return {
    type: "score",
    score: Math.min(round4(expected), levels.length - 1),
    confidence: probabilities[top],
    probabilities: Object.fromEntries(probabilities.map((p, i) => [String(i), p])),
    legend: Object.fromEntries(levels.map((level, i) => [String(i), level])),
  };
}

/** The kinds of `x-mock-invalid-answer`, each spoiling the first question's answer. */
export const INVALID_ANSWERS = ["missing", "type", "range"] as const;
export type InvalidAnswer = (typeof INVALID_ANSWERS)[number];

/** The answers with the first one spoiled as `kind` says. */
export function spoil(answers: [string, Record<string, unknown>][], kind: InvalidAnswer): [string, Record<string, unknown>][] {
  const [[id, first], ...rest] = answers as [[string, Record<string, unknown>], ...[string, Record<string, unknown>][]];
  if (kind === "missing") return rest;
  if (kind === "type") return [[id, { ...first, type: first.type === "noul" ? "score" : "noul" }], ...rest];
  const outOfRange =
    first.type === "noul" ? { noul: 1.5 } : first.type === "choice" ? { choice: `${String(first.choice)}-not-an-option` } : { score: -1 };
  return [[id, { ...first, ...outOfRange }], ...rest];
}
