import { describe, expect, it } from "vitest";
import { pageSizeQuery } from "../../worker-kit/wire/query.js";

describe("pageSizeQuery", () => {
  const limit = pageSizeQuery({ min: 1, max: 100, fallback: 20 }, "per page");

  it("reads digits within the range, and the fallback when absent", () => {
    expect(limit.parse("1")).toBe(1);
    expect(limit.parse("100")).toBe(100);
    expect(limit.parse(undefined)).toBe(20);
  });

  it.each(["0", "101", "1000", "-1", "1e2", "abc", "", " 5", "2.5"])("refuses %j naming the range", (value) => {
    const result = limit.safeParse(value);
    expect(result.success).toBe(false);
    expect(result.error!.issues[0]!.message).toBe("must be an integer from 1 to 100");
  });
});
