import { describe, expect, it } from "vitest";
import { GatewayError } from "../../src/errors.js";
import { idRange, oneId } from "../../src/id-prefix.js";

// A case or incident named by its full id or an unambiguous prefix (docs/support.md, "Ids"): the range a prefix
// covers, and the verdict on what the database found in it.

const ID = "8cf298db-1c2e-4f3a-9b1d-0123456789ab";

function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
  }
  throw new Error("expected a GatewayError");
}

describe("idRange", () => {
  it("covers every uuid a prefix of at least eight hex digits begins", () => {
    expect(idRange("8cf298db")).toEqual({
      low: "8cf298db-0000-0000-0000-000000000000",
      high: "8cf298db-ffff-ffff-ffff-ffffffffffff",
    });
    expect(idRange("8CF298DB-1C")).toEqual({
      low: "8cf298db-1c00-0000-0000-000000000000",
      high: "8cf298db-1cff-ffff-ffff-ffffffffffff",
    });
  });

  it("takes a full id, with or without its hyphens, as a range of one", () => {
    expect(idRange(ID)).toEqual({ low: ID, high: ID });
    expect(idRange(ID.replaceAll("-", ""))).toEqual({ low: ID, high: ID });
    expect(idRange(` ${ID.toUpperCase()} `)).toEqual({ low: ID, high: ID });
  });

  it("names nothing when too short, not hex, too long or hyphenated elsewhere", () => {
    for (const input of ["8cf298d", "", "not-a-uuid", "8cf298dg", `${ID}0`, "8cf2-98db", "8cf298db1-c2e", "8cf298db--1c"]) {
      expect(idRange(input), input).toBeNull();
    }
  });
});

describe("oneId", () => {
  it("answers the one match", () => {
    expect(oneId("8cf298db", { count: 1, id: ID }, "case")).toBe(ID);
  });

  it("is 404 not_found for none, and for an input that names nothing", () => {
    expect(refusal(() => oneId("8cf298db", { count: 0, id: null }, "case"))).toMatchObject({
      status: 404,
      code: "not_found",
      message: "No such case.",
    });
    expect(refusal(() => oneId("7c04", null, "incident"))).toMatchObject({
      status: 404,
      code: "not_found",
      message: "No such incident: name it by its id or its first 8+ hex digits.",
    });
  });

  it("is 400 ambiguous_id naming how many matched for several", () => {
    expect(refusal(() => oneId("8cf298db", { count: 3, id: ID }, "incident"))).toMatchObject({
      status: 400,
      code: "ambiguous_id",
      param: "id",
      message: "The id prefix 8cf298db matches 3 incidents; give more of the id.",
    });
  });
});
