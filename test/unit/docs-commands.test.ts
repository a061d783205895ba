import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

// `gateway` is not on the PATH after `npm install` (docs/operations.md, "Running gateway"): a shell example a
// reader copies must say `npx gateway` (or a path to bin/gateway); synopses (plain ``` blocks) may write it bare.

const docs = ["README.md", ...readdirSync("docs").map((f) => path.join("docs", f))].filter((f) => f.endsWith(".md"));

/** The lines of every ```sh block of a Markdown file. */
function shellLines(text: string): string[] {
  return [...text.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split("\n"));
}

/** A command that starts with a bare `gateway`: at the start of the line, after a pipe, `$(`, `&&` or `;`. */
const BARE = /(^|[|;(]|&&)\s*(\w+=[^\s(]+\s+)*gateway\s/;

describe("the docs' shell examples", () => {
  it.each(docs)("%s runs gateway as npx gateway or bin/gateway", (file) => {
    const bare = shellLines(readFileSync(file, "utf8")).filter((line) => BARE.test(line));
    expect(bare).toEqual([]);
  });

  it("README and docs/cli.md say how to run it", () => {
    for (const file of ["README.md", "docs/cli.md"]) {
      const text = readFileSync(file, "utf8");
      for (const way of ["npx gateway", "bin/gateway", "npm link"]) expect(text, `${file}: ${way}`).toContain(way);
    }
  });
});
