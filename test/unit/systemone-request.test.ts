import { describe, expect, it } from "vitest";
import { GatewayError } from "../../src/errors.js";
import { toSystemOneCall, upstreamBody } from "../../src/inference/systemone-request.js";
import { BAD_REQUESTS as bad } from "../helpers/systemone.js";

// Every validation rule of the evaluation request (spec "the service request"), each bad case with its 422 and
// the `param` that names the failing field; then what passes, and the text that goes upstream.

const noul = { type: "noul" };
const choice = { type: "choice", criteria: { yes: "it holds", no: null } };
const score = { type: "score", criteria: ["bad", { label: "good", weight: 1 }] };
const base = { model: "judge", state: { transcript: ["hi"] }, questions: { q1: noul } };

const call = (body: unknown) => toSystemOneCall(body, JSON.stringify(body));

function refusal(body: unknown): GatewayError {
  try {
    call(body);
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error(`accepted: ${JSON.stringify(body)}`);
}

describe("evaluation request validation", () => {
  it.each(bad)("refuses %s with 422 naming the field", (_, body, param) => {
    const err = refusal(body);
    expect(err.status).toBe(422);
    expect(err.type).toBe("invalid_request_error");
    expect(err.code).toBe("invalid_value");
    expect(err.param).toBe(param);
    expect(err.message.length).toBeGreaterThan(10);
  });

  it("accepts every document kind for state, instructions and descriptions, null levels included", () => {
    for (const state of ["text", "", { a: { b: [1, null, "x"] } }, [1, [2, { c: null }]], null]) {
      expect(call({ ...base, state }).request.state).toEqual(state);
    }
    const questions = {
      a: { type: "noul", instructions: "is it polite?", criteria: { true: "polite", false: "rude" } },
      b: { type: "noul", instructions: null, criteria: null },
      c: { type: "choice", instructions: { lang: "en" }, criteria: { x: "text", y: { k: 1 }, z: [1], w: null } },
      d: { type: "score", instructions: ["step 1"], criteria: [null, "fine", { k: [1] }, ["list"]] },
      e: score,
      f: choice,
    };
    const { request } = call({ ...base, questions, stream: false, temperature: 0.2, metadata: { tag: 1 } });
    expect(Object.keys(request.questions)).toEqual(["a", "b", "c", "d", "e", "f"]);
    expect(request.questions.d).toEqual(questions.d);
    expect(request.stream).toBe(false);
    expect((request as Record<string, unknown>).temperature).toBe(0.2);
  });

  it("keeps question IDs and option names exactly, __proto__ included", () => {
    const text =
      '{"model":"judge","state":null,"questions":{"__proto__":{"type":"choice","criteria":{"__proto__":"a","b":null}},"Q 1/ü":{"type":"noul"}}}';
    const { request } = toSystemOneCall(JSON.parse(text), text);
    expect(Object.keys(request.questions)).toEqual(["__proto__", "Q 1/ü"]);
    expect(Object.keys(request.questions["__proto__"]!.criteria!)).toEqual(["__proto__", "b"]);
  });
});

describe("the upstream body", () => {
  it("is the client's text with only the model replaced: numbers keep their spelling", () => {
    const text =
      '{ "questions": {"q1": {"type": "noul"}}, "model" : "judge", "state": {"id": 12345678901234567890, "w": 1.50, "e": 1e2}, "seed": 7 }';
    const forwarded = upstreamBody(toSystemOneCall(JSON.parse(text), text), "1.13.0");
    expect(forwarded).toBe(text.replace('"model" : "judge"', '"model" : "1.13.0"'));
  });

  it("is serialised again when the text is ambiguous (a duplicate model key)", () => {
    const text = '{"model":"other","model":"judge","state":"s","questions":{"q1":{"type":"noul"}}}';
    const forwarded = upstreamBody(toSystemOneCall(JSON.parse(text), text), "1.13.0");
    expect(JSON.parse(forwarded)).toEqual({ model: "1.13.0", state: "s", questions: { q1: { type: "noul" } } });
  });
});
