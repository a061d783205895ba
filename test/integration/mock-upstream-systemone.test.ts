import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MockUpstream, startMockUpstream } from "../../src/mock-upstream/server.js";
import { readAnswers } from "../../src/providers/systemone/read-answers.js";
import type { Question } from "../../src/providers/systemone/request-schema.js";
import { postJson } from "../helpers/mock-upstream-client.js";

// The mock evaluator over real HTTP: deterministic answers that the gateway's own answer check accepts,
// usage at 4 characters a token, 422 for bad input, and the fault headers (invalid answers, zero or missing
// usage, 529 with retry hints).

const API_KEY = "eval-key";
let mock: MockUpstream;

beforeAll(async () => {
  mock = await startMockUpstream({ port: 0, apiKey: API_KEY });
});
afterAll(async () => {
  await mock.close();
});

const questions: Record<string, Question> = {
  polite: { type: "noul", instructions: "Is the reply polite?", criteria: { true: "polite", false: "rude" } },
  tone: { type: "choice", criteria: { formal: "formal register", casual: null, mixed: { note: ["both"] } } },
  quality: { type: "score", criteria: ["poor", null, { label: "excellent", weight: 1.5 }] },
};
const body = { model: "1.13.0", state: { transcript: [{ role: "user", text: "Hi there" }] }, questions };

const post = (payload: unknown, headers: Record<string, string> = {}) =>
  postJson(`${mock.url}/v1/systemone`, payload, { authorization: `Bearer ${API_KEY}`, ...headers });

async function answer(payload: unknown = body, headers: Record<string, string> = {}) {
  const res = await post(payload, headers);
  expect(res.status).toBe(200);
  return (await res.json()) as {
    model: string;
    answers: Record<string, Record<string, unknown>>;
    usage?: { input_tokens: number; output_tokens: number };
  };
}

describe("mock upstream: evaluation", () => {
  it("answers every question with its type, in the shape the gateway accepts, usage at 4 characters a token", async () => {
    const json = await answer();
    expect(json.model).toBe("1.13.0");
    expect(readAnswers(questions, json)).toMatchObject({ ok: true });
    expect(json.answers.quality!.legend).toEqual({ 0: "poor", 1: null, 2: { label: "excellent", weight: 1.5 } });
    const chars =
      JSON.stringify(body.state).length + Object.entries(questions).reduce((sum, [id, q]) => sum + id.length + JSON.stringify(q).length, 0);
    expect(json.usage).toEqual({ input_tokens: Math.ceil(chars / 4), output_tokens: 3 });
    // Rounded to 4 decimals and not renormalised.
    for (const value of Object.values(json.answers.tone!.probabilities as Record<string, number>))
      expect(Math.round(value * 10_000)).toBe(value * 10_000);
  });

  it("is deterministic per question, whatever it is asked with", async () => {
    const [a, b] = await Promise.all([post(body), post(body)]);
    expect(await a.text()).toBe(await b.text());
    const alone = await answer({ ...body, questions: { tone: questions.tone } });
    const all = await answer();
    expect(alone.answers.tone).toEqual(all.answers.tone);
    const otherState = await answer({ ...body, state: "another state" });
    expect(otherState.answers).not.toEqual(all.answers);
  });

  it("keeps question IDs such as __proto__ as plain keys", async () => {
    const text = '{"model":"1.13.0","state":null,"questions":{"__proto__":{"type":"choice","criteria":{"__proto__":"a","b":"b"}}}}';
    const res = await post(text);
    const raw = await res.text();
    expect(raw).toContain('"answers":{"__proto__":{"type":"choice"');
    expect(readAnswers(JSON.parse(text).questions, JSON.parse(raw))).toMatchObject({ ok: true });
  });

  it("refuses bad input with 422 naming the field", async () => {
    const cases: [unknown, string | null][] = [
      [{ ...body, model: "" }, "model"],
      [{ model: "1.13.0", questions }, "state"],
      [{ ...body, questions: {} }, "questions"],
      [{ ...body, questions: { q: { type: "rank" } } }, "questions.q"],
      [{ ...body, questions: { q: { type: "score", criteria: ["one"] } } }, "questions.q"],
      [{ ...body, stream: true }, "stream"],
      ["{not json", null],
    ];
    for (const [payload, param] of cases) {
      const res = await post(payload);
      expect(res.status, JSON.stringify(payload)).toBe(422);
      expect(((await res.json()) as { error: { param: unknown } }).error.param).toBe(param);
    }
    expect((await postJson(`${mock.url}/v1/systemone`, body)).status).toBe(401);
  });

  it("spoils the first answer on x-mock-invalid-answer", async () => {
    for (const kind of ["missing", "type", "range"]) {
      const json = await answer(body, { "x-mock-invalid-answer": kind });
      expect(readAnswers(questions, json), kind).toMatchObject({ ok: false });
    }
    const ignored = await answer(body, { "x-mock-invalid-answer": "bogus" });
    expect(readAnswers(questions, ignored)).toMatchObject({ ok: true });
  });

  it("reports zero usage, omits usage, and answers 529 with both retry hints", async () => {
    expect((await answer(body, { "x-mock-zero-usage": "1" })).usage).toEqual({ input_tokens: 0, output_tokens: 0 });
    expect((await answer(body, { "x-mock-omit-usage": "1" })).usage).toBeUndefined();
    const res = await post(body, { "x-mock-status": "529", "x-mock-retry-after": "2", "x-mock-retry-after-ms": "1500" });
    expect(res.status).toBe(529);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(res.headers.get("retry-after-ms")).toBe("1500");
  });
});
