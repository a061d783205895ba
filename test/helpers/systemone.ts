import { afterAll, beforeAll } from "vitest";
import type { ConfigInput } from "../../src/config/schema.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { startFaultProxy, type FaultProxy } from "./fault-proxy.js";
import { startTestGateway, type TestGateway } from "./gateway-app.js";

// What the evaluation-service tests share: a gateway in front of the mock evaluator (through the fault proxy),
// a question set covering every type, the gateway's raw HTTP call, and every invalid request.

interface EvaluationFixture {
  mock: MockUpstream;
  proxy: FaultProxy;
  gw: TestGateway;
}

/**
 * Registers the hooks of an evaluation test: the mock upstream, the fault proxy in front of it, and a gateway
 * whose config `configure` builds with them. Read the fields in beforeAll or in the tests.
 */
export function useEvaluationGateway(configure: (proxy: FaultProxy, mock: MockUpstream) => Partial<ConfigInput>): EvaluationFixture {
  const fixture = {} as EvaluationFixture;
  beforeAll(async () => {
    fixture.mock = await startMockUpstream();
    fixture.proxy = await startFaultProxy(fixture.mock.url);
    fixture.gw = await startTestGateway({ config: configure(fixture.proxy, fixture.mock) });
  });
  afterAll(async () => {
    await fixture.gw?.close();
    await fixture.proxy?.close();
    await fixture.mock?.close();
  });
  return fixture;
}

export const QUESTIONS = {
  polite: { type: "noul", instructions: "Is the reply polite?", criteria: { true: "polite", false: "rude" } },
  tone: { type: "choice", criteria: { formal: "formal register", casual: null, mixed: { note: ["both"] } } },
  quality: { type: "score", instructions: null, criteria: ["poor", null, { label: "excellent", weight: 1.5 }] },
} as const;

export const evaluation = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  state: {
    transcript: [
      { role: "user", text: "Hi there" },
      { role: "assistant", text: "Hello! How can I help?" },
    ],
  },
  questions: QUESTIONS,
  ...extra,
});

export interface Evaluated {
  status: number;
  headers: Headers;
  json: Record<string, unknown>;
}

/** POSTs `body` (an object, or raw text) to the gateway's `path` with `key`. */
export async function evaluate(
  url: string,
  key: string,
  body: unknown,
  path = "/v1/systemone",
  headers: Record<string, string> = {},
): Promise<Evaluated> {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** A systemone provider (its base_url is the evaluator's root) whose requests carry `faults`. */
export const evaluator = (
  proxy: FaultProxy,
  faults: Record<string, string | number> = {},
): NonNullable<ConfigInput["providers"]>[string] => ({
  protocol: "systemone",
  base_url: proxy.baseUrl(faults).replace(/\/v1$/, ""),
});

/** A systemone model on `targets`, version 1.13.0 unless told otherwise. */
export const judge = (targets: string[], extra: Record<string, unknown> = {}) => ({
  kind: "systemone" as const,
  upstream: "1.13.0",
  targets,
  ...extra,
});

const noul = { type: "noul" };
const base = { model: "judge", state: { transcript: ["hi"] }, questions: { q1: noul } };

/** Every validation rule of the request, as [case, body, param] (the body names `model` "judge"). */
export const BAD_REQUESTS: [string, unknown, string | null][] = [
  ["a body that is no object", [], null],
  ["a body that is a string", "judge", null],
  ["no model", { state: null, questions: { q1: noul } }, "model"],
  ["a model that is no string", { ...base, model: 7 }, "model"],
  ["an empty model", { ...base, model: "" }, "model"],
  ["no state", { model: "judge", questions: { q1: noul } }, "state"],
  ["a number state", { ...base, state: 3 }, "state"],
  ["a boolean state", { ...base, state: true }, "state"],
  ["no questions", { model: "judge", state: null }, "questions"],
  ["empty questions", { ...base, questions: {} }, "questions"],
  ["questions as an array", { ...base, questions: [noul] }, "questions"],
  ["questions as a string", { ...base, questions: "q1" }, "questions"],
  ["an empty question ID", { ...base, questions: { "": noul } }, "questions."],
  ["a question that is no object", { ...base, questions: { q1: "noul" } }, "questions.q1"],
  ["a question without type", { ...base, questions: { q1: {} } }, "questions.q1.type"],
  ["an unknown type", { ...base, questions: { q1: { type: "rank" } } }, "questions.q1.type"],
  ["a type of the wrong case", { ...base, questions: { q1: { type: "NOUL" } } }, "questions.q1.type"],
  ["instructions that are a number", { ...base, questions: { q1: { ...noul, instructions: 4 } } }, "questions.q1.instructions"],
  ["instructions that are a boolean", { ...base, questions: { q1: { ...noul, instructions: false } } }, "questions.q1.instructions"],
  ["noul criteria as an array", { ...base, questions: { q1: { ...noul, criteria: ["yes"] } } }, "questions.q1.criteria"],
  ["noul criteria as a string", { ...base, questions: { q1: { ...noul, criteria: "yes" } } }, "questions.q1.criteria"],
  ["choice without criteria", { ...base, questions: { q1: { type: "choice" } } }, "questions.q1.criteria"],
  ["choice criteria empty", { ...base, questions: { q1: { type: "choice", criteria: {} } } }, "questions.q1.criteria"],
  ["choice criteria as an array", { ...base, questions: { q1: { type: "choice", criteria: ["a", "b"] } } }, "questions.q1.criteria"],
  [
    "a choice description that is a number",
    { ...base, questions: { q1: { type: "choice", criteria: { a: "x", b: 2 } } } },
    "questions.q1.criteria.b",
  ],
  ["an empty option name", { ...base, questions: { q1: { type: "choice", criteria: { "": "x" } } } }, "questions.q1.criteria."],
  ["score without criteria", { ...base, questions: { q1: { type: "score" } } }, "questions.q1.criteria"],
  ["score with one level", { ...base, questions: { q1: { type: "score", criteria: ["only"] } } }, "questions.q1.criteria"],
  ["score criteria as an object", { ...base, questions: { q1: { type: "score", criteria: { 0: "a", 1: "b" } } } }, "questions.q1.criteria"],
  ["a level that is a number", { ...base, questions: { q1: { type: "score", criteria: ["a", 1] } } }, "questions.q1.criteria[1]"],
  ["stream: true", { ...base, stream: true }, "stream"],
  ["stream that is no boolean", { ...base, stream: "false" }, "stream"],
  ["a bad second question", { ...base, questions: { q1: noul, q2: { type: "choice", criteria: {} } } }, "questions.q2.criteria"],
  [
    "a bad question named __proto__",
    JSON.parse('{"model":"judge","state":null,"questions":{"__proto__":{"type":"x"}}}'),
    "questions.__proto__.type",
  ],
];
