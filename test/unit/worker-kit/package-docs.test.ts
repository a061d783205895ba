import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// The workers that test/e2e/worker-kit-package.test.ts compiles and runs from outside are the ones the package's
// README and docs/worker-kit.md show, character for character: a newcomer copies what was proved.
const examples = ["examples/worker-kit/worker.ts", "examples/worker-kit/worker.mjs"];

describe("the package's documented workers", () => {
  it.each(["worker-kit/README.md", "docs/worker-kit.md"])("%s shows the tested workers verbatim", (doc) => {
    const text = readFileSync(doc, "utf8");
    for (const example of examples) expect(text, example).toContain(readFileSync(example, "utf8"));
    for (const step of ["npm pkg set type=module", "npx tsc --init", "npx tsc\n", "node worker.js", "node worker.mjs"]) {
      expect(text, step).toContain(step);
    }
  });
});
