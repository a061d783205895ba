import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { validateGemini } from "../helpers/gemini-proto.js";
import { compareWithReference, referencePath } from "../helpers/reference.js";

// The vendored proto extract must be what the script makes of the reference protos. Runs where shared/ sits
// beside the checkout (developers) and always in CI; a lone clone skips it (test/helpers/reference.ts).
const reference = referencePath("gemini", "google", "ai", "generativelanguage", "v1beta");

describe.runIf(compareWithReference(reference))("vendor-schemas/gemini-proto.json", () => {
  it("is the extract of the reference protos", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "gemini-proto-"));
    try {
      const fresh = path.join(dir, "gemini-proto.json");
      execFileSync(process.execPath, ["scripts/extract-gemini-proto.mjs", reference, fresh], { stdio: "ignore" });
      expect(readFileSync("vendor-schemas/gemini-proto.json", "utf8")).toBe(readFileSync(fresh, "utf8"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("validateGemini", () => {
  it("accepts a well-formed answer and names what is wrong in a bad one", () => {
    const good = {
      candidates: [
        {
          content: { role: "model", parts: [{ text: "hi" }, { functionCall: { name: "f", args: { a: 1 } } }] },
          finishReason: "STOP",
          index: 0,
        },
      ],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
      modelVersion: "m",
      responseId: "r",
    };
    expect(validateGemini("GenerateContentResponse", good)).toEqual([]);
    const bad = { candidates: [{ content: { parts: { text: 1 } }, finishReason: "DONE", index: "0" }], usage: {} };
    expect(validateGemini("GenerateContentResponse", bad)).toEqual([
      "/candidates/0/content/parts is not a list",
      "/candidates/0/content/parts/text is not a string: 1",
      '/candidates/0/finishReason is not a Candidate.FinishReason: "DONE"',
      '/candidates/0/index is not a int32: "0"',
      "/usage is not a field of GenerateContentResponse",
    ]);
  });
});
