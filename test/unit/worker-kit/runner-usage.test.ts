import { describe, expect, it } from "vitest";
import { addDecimal, addUsage, EMPTY_USAGE } from "../../../worker-kit/runner/usage.js";

describe("addDecimal", () => {
  it.each([
    ["0", "0", "0"],
    ["0.1", "0.2", "0.3"],
    ["0.0125", "0.0075", "0.02"],
    ["1.999999999", "0.000000001", "2"],
    ["999999999999.999999999", "0", "999999999999.999999999"],
    ["12", "0.5", "12.5"],
  ])("%s + %s = %s exactly", (a, b, sum) => {
    expect(addDecimal(a, b)).toBe(sum);
  });

  it.each(["-1", "1e-3", "0.1234567891", "", " 1", "1."])("refuses %j", (bad) => {
    expect(() => addDecimal(bad, "0")).toThrow(TypeError);
  });
});

describe("addUsage", () => {
  it("starts known and free, and adds counts and costs", () => {
    expect(EMPTY_USAGE.cost_usd).toBe("0");
    let total = addUsage(EMPTY_USAGE, { model_calls: 1, input_tokens: 100, output_tokens: 20, cost_usd: "0.1" });
    total = addUsage(total, { model_calls: 1, tool_calls: 2, input_tokens: 50, cost_usd: "0.2" });
    expect(total).toEqual({ model_calls: 2, tool_calls: 2, input_tokens: 150, output_tokens: 20, cost_usd: "0.3" });
  });

  it("makes the cost unknown for good once one report does not know it (null or absent), counts still adding", () => {
    const unknown = addUsage(addUsage(EMPTY_USAGE, { cost_usd: "0.5" }), { model_calls: 1, cost_usd: null });
    expect(unknown.cost_usd).toBeNull();
    const later = addUsage(unknown, { model_calls: 1, cost_usd: "0.25" });
    expect(later).toMatchObject({ model_calls: 2, cost_usd: null });
    expect(addUsage(EMPTY_USAGE, { tool_calls: 1 }).cost_usd).toBeNull();
  });

  it.each([{ model_calls: -1 }, { input_tokens: 1.5 }, { output_tokens: Number.NaN }])("refuses the bad count %j", (report) => {
    expect(() => addUsage(EMPTY_USAGE, { ...report, cost_usd: "0" })).toThrow(TypeError);
  });
});
