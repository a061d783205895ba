import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { embedOpenApiSchemas, protoJsonSchemas, type ProtoExtract } from "../../src/openapi/vendor-schemas.js";

describe("embedOpenApiSchemas", () => {
  it("renames the schemas and their references, and turns OpenAPI 3.0 nullable into the 3.1 form", () => {
    const embedded = embedOpenApiSchemas("openai", {
      Choice: {
        type: "object",
        properties: {
          finish_reason: { type: "string", enum: ["stop"], nullable: true },
          message: { $ref: "#/components/schemas/Message" },
          logprobs: { allOf: [{ $ref: "#/components/schemas/Logprobs" }], nullable: true },
        },
      },
      Message: { type: "object", nullable: false },
    });
    expect(Object.keys(embedded)).toEqual(["openai.Choice", "openai.Message"]);
    expect(embedded["openai.Choice"]).toEqual({
      type: "object",
      properties: {
        finish_reason: { anyOf: [{ type: "string", enum: ["stop"] }, { type: "null" }] },
        message: { $ref: "#/components/schemas/openai.Message" },
        logprobs: { anyOf: [{ allOf: [{ $ref: "#/components/schemas/openai.Logprobs" }] }, { type: "null" }] },
      },
    });
    expect(embedded["openai.Message"]).toEqual({ type: "object" });
  });
});

describe("protoJsonSchemas", () => {
  const proto: ProtoExtract = {
    messages: {
      Outer: {
        inner: { type: "Inner", repeated: true },
        reason: { type: "Reason", repeated: false },
        count: { type: "int64", repeated: false },
        labels: { type: "map<string, string>", repeated: false },
        where: { type: "google.type.LatLng", repeated: false },
      },
      "Outer.Inner": { text: { type: "string", repeated: false }, data: { type: "bytes", repeated: false } },
      Inner: { unused: { type: "bool", repeated: false } },
      Unreached: { x: { type: "string", repeated: false } },
    },
    enums: { "Outer.Reason": ["REASON_UNSPECIFIED", "STOP"] },
  };

  it("resolves names from the innermost scope out, keeps only what the roots reach, and maps scalars as proto3 JSON", () => {
    const schemas = protoJsonSchemas(proto, ["Outer"]);
    expect(Object.keys(schemas)).toEqual(["gemini.Outer", "gemini.Outer.Inner", "gemini.Outer.Reason"]);
    expect(schemas["gemini.Outer"]).toMatchObject({
      properties: {
        inner: { type: "array", items: { $ref: "#/components/schemas/gemini.Outer.Inner" } },
        reason: { $ref: "#/components/schemas/gemini.Outer.Reason" },
        count: { anyOf: [{ type: "integer" }, { type: "string" }] },
        labels: { type: "object", additionalProperties: { type: "string" } },
        where: { description: expect.stringContaining("outside the copied protos") },
      },
    });
    expect(schemas["gemini.Outer.Reason"]).toEqual({ type: "string", enum: ["REASON_UNSPECIFIED", "STOP"] });
  });

  it("refuses a root the protos do not have", () => {
    expect(() => protoJsonSchemas(proto, ["Missing"])).toThrow(/no message Missing/);
  });

  it("the real protos: a generateContent answer validates, a wrong type and an unknown enum value do not", () => {
    const extract = JSON.parse(readFileSync("vendor-schemas/gemini-proto.json", "utf8")) as ProtoExtract;
    const schemas = protoJsonSchemas(extract, ["GenerateContentResponse"]);
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema({ $id: "doc", components: { schemas } });
    const validate = ajv.getSchema("doc#/components/schemas/gemini.GenerateContentResponse")!;
    const answer = {
      candidates: [{ content: { role: "model", parts: [{ text: "hi" }] }, finishReason: "STOP", index: 0 }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
      modelVersion: "gemini-2.0-flash",
      responseId: "r1",
    };
    expect(validate(answer), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ candidates: [{ finishReason: "DONE" }] })).toBe(false);
    expect(validate({ usageMetadata: { promptTokenCount: "three" } })).toBe(false);
  });
});
