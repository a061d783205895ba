import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { compareWithReference, referencePath } from "../helpers/reference.js";

// The vendored schemas must be exactly the reference documents'. Runs where shared/ sits beside the checkout
// (developers) and always in CI; a lone clone skips it (test/helpers/reference.ts).
const documents = [
  { fixture: "openai-schemas.json", reference: path.join("openai", "openapi.yaml") },
  { fixture: "anthropic-schemas.json", reference: path.join("anthropic", "openapi.json") },
].map((d) => ({ ...d, reference: referencePath(d.reference) }));

describe.each(documents)("vendor-schemas/$fixture", ({ fixture, reference }) => {
  it.runIf(compareWithReference(reference))("holds the reference document's schemas unchanged", () => {
    const vendored = JSON.parse(readFileSync(path.join("vendor-schemas", fixture), "utf8")) as { schemas: Record<string, unknown> };
    const text = readFileSync(reference, "utf8");
    const { components } = (reference.endsWith(".json") ? JSON.parse(text) : parse(text)) as {
      components: { schemas: Record<string, unknown> };
    };
    expect(Object.keys(vendored.schemas).length).toBeGreaterThan(0);
    for (const [name, schema] of Object.entries(vendored.schemas)) expect(schema, name).toEqual(components.schemas[name]);
  });
});
