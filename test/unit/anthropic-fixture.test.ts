import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

// The vendored schemas must be exactly the reference document's. Runs where shared/ sits beside the checkout
// (CI, developers); a lone clone skips it.
const reference = path.resolve("..", "shared", "reference", "anthropic", "openapi.json");

describe.runIf(existsSync(reference))("test/fixtures/anthropic-schemas.json", () => {
  it("holds the reference document's schemas unchanged", () => {
    const fixture = JSON.parse(readFileSync("test/fixtures/anthropic-schemas.json", "utf8")) as { schemas: Record<string, unknown> };
    const { components } = JSON.parse(readFileSync(reference, "utf8")) as { components: { schemas: Record<string, unknown> } };
    expect(Object.keys(fixture.schemas).length).toBeGreaterThan(0);
    for (const [name, schema] of Object.entries(fixture.schemas)) expect(schema, name).toEqual(components.schemas[name]);
  });
});
