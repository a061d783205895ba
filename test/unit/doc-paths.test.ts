import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

// Every repository path that the docs and the code's comments name exists: a newcomer follows them, and a file
// moved or renamed leaves none behind. A path to a file that is gone is written without its folder.
const ROOTS = ["README.md", "docs", "src", "cli", "worker-kit", "test", "bench", "scripts", "migrations", "examples"];
// Its paths are made up on purpose: it tests the import-layer rule on file names.
const SYNTHETIC = new Set([path.join("test", "unit", "import-layers.test.ts")]);
const PATH =
  /(?<![\w./-])((?:src|cli|worker-kit|test|bench|scripts|docs|migrations|examples|vendor-schemas)\/[\w./-]*\w\.(?:tsx|ts|mjs|json|js|md|sql|yaml))(?![\w-])/g;

function filesUnder(entry: string, out: string[] = []): string[] {
  if (!existsSync(entry)) return out;
  if (statSync(entry).isDirectory()) {
    for (const name of readdirSync(entry)) if (name !== "node_modules" && name !== "dist") filesUnder(path.join(entry, name), out);
  } else if (/\.(md|ts|tsx|mjs|js|sql|yaml)$/.test(entry) && !SYNTHETIC.has(entry)) out.push(entry);
  return out;
}

// Sources import each other as `.js` (what tsc emits): such a path names its `.ts` or `.tsx` source.
const exists = (p: string) =>
  existsSync(p) || (p.endsWith(".js") && (existsSync(p.replace(/\.js$/, ".ts")) || existsSync(p.replace(/\.js$/, ".tsx"))));

describe("paths named in the docs and comments", () => {
  it("all exist", () => {
    const files = ROOTS.flatMap((root) => filesUnder(root));
    expect(files.length).toBeGreaterThan(100);
    const missing = files.flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(PATH)].map((m) => `${file}: ${m[1]}`).filter((hit) => !exists(hit.split(": ")[1]!)),
    );
    expect(missing).toEqual([]);
  });
});
