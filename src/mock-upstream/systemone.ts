import { Hono, type Context } from "hono";
import type { MockUpstreamEnv } from "./context.js";
import { openaiError } from "./dialects.js";
import { charTokens } from "./mock-text.js";
import { answerOf, spoil, type MockQuestion } from "./systemone-evaluator.js";

/**
 * The evaluator's `POST /v1/systemone` (docs/mock-upstream.md, "Evaluation protocol"): `{model, state,
 * questions}` in, `{model, answers, usage}` out. Invalid requests get 422, as the evaluator's do. Questions
 * are read over the body's own entries, so IDs such as `__proto__` work as they do in the gateway.
 */

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isDocument = (v: unknown) => v === null || typeof v === "string" || typeof v === "object";

/** What is wrong with a question, or null. */
function questionProblem(q: unknown): string | null {
  if (!isObject(q)) return "must be an object";
  if (q.instructions !== undefined && !isDocument(q.instructions)) return "instructions must be a string, an object, an array or null";
  if (q.type === "noul")
    return q.criteria === undefined || q.criteria === null || isObject(q.criteria) ? null : "criteria must be an object or null";
  if (q.type === "choice") {
    const ok = isObject(q.criteria) && Object.keys(q.criteria).length > 0 && Object.values(q.criteria).every(isDocument);
    return ok ? null : "criteria must map options to descriptions";
  }
  if (q.type === "score") {
    return Array.isArray(q.criteria) && q.criteria.length >= 2 && q.criteria.every(isDocument)
      ? null
      : "criteria must list at least two levels";
  }
  return 'type must be "noul", "choice" or "score"';
}

/** The first problem of the body, with the field it concerns. */
function problemOf(body: unknown): { param: string; message: string } | null {
  if (!isObject(body)) return { param: "", message: "the body must be a JSON object" };
  if (typeof body.model !== "string" || body.model === "") return { param: "model", message: "model must be a non-empty string" };
  if (body.state === undefined || !isDocument(body.state))
    return { param: "state", message: "state must be a string, an object, an array or null" };
  if (body.stream === true) return { param: "stream", message: "streaming is not supported" };
  if (!isObject(body.questions) || Object.keys(body.questions).length === 0)
    return { param: "questions", message: "questions must be a non-empty map" };
  for (const [id, question] of Object.entries(body.questions)) {
    const problem = questionProblem(question);
    if (problem) return { param: `questions.${id}`, message: problem };
  }
  return null;
}

const invalid = (c: Context, param: string, message: string) =>
  openaiError(c, 422, `Invalid request: ${message}`, { param: param || null, code: "invalid_value" });

export const systemoneRoute = new Hono<MockUpstreamEnv>().post("/v1/systemone", async (c) => {
  const body: unknown = await c.req.json().catch(() => undefined);
  if (body === undefined) return invalid(c, "", "the body is not JSON");
  const problem = problemOf(body);
  if (problem) return invalid(c, problem.param, problem.message);
  const { model, state, questions } = body as { model: string; state: unknown; questions: Record<string, MockQuestion> };
  const { omitUsage, zeroUsage, invalidAnswer } = c.get("faults");
  let answers = Object.entries(questions).map(([id, question]): [string, Record<string, unknown>] => [
    id,
    answerOf(model, state, id, question),
  ]);
  if (invalidAnswer) answers = spoil(answers, invalidAnswer);
  // The mock's 4-characters-a-token rule over the state and each question's ID and JSON; one output token per answer.
  const chars =
    (typeof state === "string" ? state : JSON.stringify(state)).length +
    Object.entries(questions).reduce((sum, [id, q]) => sum + id.length + JSON.stringify(q).length, 0);
  const usage = zeroUsage ? { input_tokens: 0, output_tokens: 0 } : { input_tokens: charTokens(chars), output_tokens: answers.length };
  // fromEntries keeps a question ID "__proto__" as a plain key.
  return c.json({ model, answers: Object.fromEntries(answers), ...(omitUsage ? {} : { usage }) });
});
