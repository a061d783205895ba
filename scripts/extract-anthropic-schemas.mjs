// Writes test/fixtures/anthropic-schemas.json: the schemas of the Anthropic OpenAPI document (../shared/reference)
// that the tests validate against, with everything they reference, so the tests run on a machine that has only
// this repository. Re-run after adding a root schema or when the reference document changes:
//   node scripts/extract-anthropic-schemas.mjs [path/to/openapi.json]
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const ROOTS = ["Message", "MessageStreamEvent"];

const source = path.resolve(process.argv[2] ?? "../shared/reference/anthropic/openapi.json");
const all = JSON.parse(readFileSync(source, "utf8")).components.schemas;

const picked = {};
const visit = (name) => {
  if (picked[name]) return;
  if (!all[name]) throw new Error(`no schema ${name} in ${source}`);
  picked[name] = all[name];
  const walk = (node) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (node === null || typeof node !== "object") return;
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") visit(value.replace("#/components/schemas/", ""));
      else walk(value);
    }
  };
  walk(all[name]);
};
ROOTS.forEach(visit);

let blob = null;
try {
  blob = execFileSync("git", ["hash-object", source], { encoding: "utf8" }).trim();
} catch {
  // git missing: the blob id is informational only
}
const sorted = Object.fromEntries(Object.keys(picked).sort().map((k) => [k, picked[k]]));
const out = { source: "shared/reference/anthropic/openapi.json", blob, roots: ROOTS, schemas: sorted };
writeFileSync("test/fixtures/anthropic-schemas.json", `${JSON.stringify(out)}\n`);
console.log(`wrote ${Object.keys(sorted).length} schemas from ${source} (blob ${blob})`);
