import v8 from "node:v8";
import { describe, expect, it } from "vitest";
import { extended } from "../../src/objects.js";

const spread = (a: object, b: object) => ({ ...a, ...b });

describe("extended", () => {
  it("has the members, values and order of a spread", () => {
    const cases: [object, object][] = [
      [{ model: "pub", messages: [], max_tokens: 16 }, { model: "up" }],
      [{ model: "pub", stream: true }, { stream_options: { include_usage: true } }],
      [
        { b: 1, 2: "two", a: 2, 1: "one" },
        { 0: "zero", c: 3, a: 4 },
      ],
      [{}, { only: 1 }],
      [{ only: 1 }, {}],
    ];
    for (const [a, b] of cases) {
      const out = extended(a, b);
      expect(Object.keys(out)).toEqual(Object.keys(spread(a, b)));
      expect(out).toEqual(spread(a, b));
    }
  });

  it("copies a JSON __proto__ member as data and leaves the prototype alone", () => {
    const body = JSON.parse('{"__proto__":{"polluted":true},"model":"pub"}') as object;
    const out = extended(body, { model: "up" });
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect((out as { polluted?: boolean }).polluted).toBeUndefined();
    expect(JSON.stringify(out)).toBe(JSON.stringify(spread(body, { model: "up" })));
    expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":true},"model":"up"}');
  });

  it("copies own members only", () => {
    const inherited = Object.create({ fromProto: 1 }) as Record<string, number>;
    inherited.own = 2;
    expect(extended(inherited, { more: 3 })).toEqual({ own: 2, more: 3 });
  });

  it("gives results of one shape one hidden class, also once optimised", () => {
    v8.setFlagsFromString("--allow-natives-syntax");
    // Compiled after the flag is set, so the intrinsic parses.
    const sameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean;
    const make = (i: number) =>
      extended({ requestId: `r${i}`, route: "/v1/chat/completions", startedAt: i * 1.5 }, { modelId: `m${i}`, streamed: false });
    for (let i = 0; i < 20_000; i++) make(i);
    expect(sameMap(make(1), make(2))).toBe(true);
  });
});
