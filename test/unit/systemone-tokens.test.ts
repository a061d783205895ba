import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { GatewayError } from "../../src/errors.js";
import { EvaluationTokens, tokenLimitsFor, type TokenLimits } from "../../src/inference/systemone-tokens.js";
import { countTextTokens, tokenizerSlices } from "../../src/metering/estimate.js";
import type { SystemOneRequest } from "../../src/providers/systemone/request-schema.js";

// The version limits at their boundaries, counted with the real tokenizer (the library itself computes the
// sizes here): exactly at a limit passes, one token over fails.

const LIMITS: TokenLimits = { total: 64_000, statePlusQuestion: 32_000 };
const exact = (text: string) => countTokens(text, { disallowedSpecial: new Set() });
/** n tokens of text: " dog" is one token, and o200k never merges across words. */
const filler = (n: number) => " dog".repeat(n);

type Questions = SystemOneRequest["questions"];
const request = (state: SystemOneRequest["state"], questions: Questions): SystemOneRequest => ({ model: "judge", state, questions });
/** What a question costs: its ID plus its compact JSON. */
const questionTokens = (id: string, question: object) => exact(id) + exact(JSON.stringify(question));
const noul = (instructions: string) => ({ type: "noul" as const, instructions });

async function verdict(req: SystemOneRequest, limits = LIMITS): Promise<string> {
  try {
    await new EvaluationTokens(req).check(limits);
    return "ok";
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    expect(err.status).toBe(422);
    expect(err.code).toBe("token_limit_exceeded");
    return err.param!;
  }
}

describe("version limits", () => {
  it("apply to 1.13 and every 1.13.x, configured limits first", () => {
    expect(tokenLimitsFor("1.13.0", undefined)).toEqual(LIMITS);
    expect(tokenLimitsFor("systemone-1.13.2", undefined)).toEqual(LIMITS);
    expect(tokenLimitsFor("1.13", undefined)).toEqual(LIMITS);
    expect(tokenLimitsFor("1.14.0", undefined)).toBeNull();
    expect(tokenLimitsFor("1.130.0", undefined)).toBeNull();
    expect(tokenLimitsFor("latest", undefined)).toBeNull();
    expect(tokenLimitsFor("latest", { total: 10, statePlusQuestion: 5 })).toEqual({ total: 10, statePlusQuestion: 5 });
  });
});

describe("32k: the state plus the longest question", () => {
  const question = noul(filler(100));
  const q = questionTokens("q1", question);

  it("passes exactly at the limit and fails one token over, naming the question", async () => {
    expect(exact(filler(32_000 - q))).toBe(32_000 - q);
    expect(await verdict(request(filler(32_000 - q), { q1: question }))).toBe("ok");
    expect(await verdict(request(filler(32_001 - q), { q1: question }))).toBe("questions.q1");
  });

  it("fails on the state alone, and counts a non-string state as its compact JSON", async () => {
    expect(await verdict(request(filler(32_001), { q1: question }))).toBe("state");
    const overhead = exact(JSON.stringify({ notes: filler(1) })) - 1;
    const state = { notes: filler(32_000 - q - overhead) };
    expect(exact(JSON.stringify(state))).toBe(32_000 - q);
    expect(await verdict(request(state, { q1: question }))).toBe("ok");
    expect(await verdict(request({ notes: filler(32_001 - q - overhead) }, { q1: question }))).toBe("questions.q1");
  });

  it("takes the longest question, wherever it is", async () => {
    const long = noul(filler(2000));
    const state = filler(32_000 - questionTokens("big", long));
    expect(await verdict(request(state, { a: noul("x"), big: long, z: noul("y") }))).toBe("ok");
    expect(await verdict(request(`${state} dog`, { a: noul("x"), big: long, z: noul("y") }))).toBe("questions.big");
  });
});

describe("64k: the state and all questions", () => {
  // Four questions of about 12k tokens and a state of about 16k: each pair is under 32k, together about 64k.
  const ids = ["a", "b", "c", "d"];
  const questions = (last: number): Questions => Object.fromEntries(ids.map((id, i) => [id, noul(filler(i === 3 ? last : 12_000))]));
  const stateTokens = 16_000;
  const fixed = stateTokens + ids.slice(0, 3).reduce((sum, id) => sum + questionTokens(id, noul(filler(12_000))), 0);
  const lastFor = (total: number) => {
    const overhead = questionTokens("d", noul(filler(1))) - 1;
    return total - fixed - overhead;
  };

  it("passes exactly at the limit and fails one token over, naming questions", async () => {
    const last = lastFor(64_000);
    expect(fixed + questionTokens("d", noul(filler(last)))).toBe(64_000);
    expect(await verdict(request(filler(stateTokens), questions(last)))).toBe("ok");
    expect(await verdict(request(filler(stateTokens), questions(last + 1)))).toBe("questions");
  });

  it("stops counting once a limit is certainly exceeded, and counts as the library does", async () => {
    const req = request(filler(stateTokens), questions(lastFor(64_000)));
    const tokens = new EvaluationTokens(req);
    await tokens.check(LIMITS);
    expect(await tokens.count()).toBe(64_000);
    expect(await countTextTokens(filler(100_000), 10)).toBeLessThan(100_000);
  });
});

describe("small inputs", () => {
  it("are never tokenized for the limits when their bytes fit", async () => {
    // 300 bytes cannot hold more than 300 tokens: a limit of 300 passes without counting.
    const tokens = new EvaluationTokens(request("x".repeat(250), { q: { type: "noul" } }));
    await tokens.check({ total: 300, statePlusQuestion: 300 });
    expect(tokens.estimate()).toBe(Math.ceil(250 / 3) + 1 + Math.ceil('{"type":"noul"}'.length / 3));
  });
});

describe("the tokenizer's slices", () => {
  it("add up to the library's count of the whole text, special-token spellings included", () => {
    const texts = [
      JSON.stringify({ transcript: [{ role: "user", text: "Hello,   world!\n\n\tIndented  <|endoftext|> ünïcödé 日本語 😀 12345.67" }] }),
      "a  b\t\tc \n\n d   ",
      "word ".repeat(5000),
    ];
    for (const text of texts) {
      let sum = 0;
      for (const slice of tokenizerSlices(text, 7)) sum += exact(slice);
      expect(sum).toBe(exact(text));
    }
  });

  it("count megabytes of one letter quickly, in parts", async () => {
    const run = "x".repeat(8_000_000);
    expect(await countTextTokens(run, 64_000)).toBeGreaterThan(64_000);
    expect(await countTextTokens(`<|endoftext|>${"😀".repeat(300)}`)).toBeGreaterThan(300);
  });
});
