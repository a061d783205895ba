// Shared by the extract-*-schemas scripts: picks the named root schemas of an API description's
// `components.schemas` with every schema they reference, and writes them as a test fixture that records the
// source document and its git blob id.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";

/** The roots and, transitively, every schema a `$ref` of theirs names; throws on a name the document lacks. */
function pick(all, roots, source) {
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
  roots.forEach(visit);
  return Object.fromEntries(
    Object.keys(picked)
      .sort()
      .map((k) => [k, picked[k]]),
  );
}

/**
 * Writes `{source, blob, roots, schemas}` to `out`. `label` is the source's path as the fixture records it
 * (relative to the shared folder, not this machine's path).
 */
export function writeSchemaExtract({ source, label, schemas, roots, out }) {
  const sorted = pick(schemas, roots, source);
  let blob = null;
  try {
    blob = execFileSync("git", ["hash-object", source], { encoding: "utf8" }).trim();
  } catch {
    // git missing: the blob id is informational only
  }
  writeFileSync(out, `${JSON.stringify({ source: label, blob, roots, schemas: sorted })}\n`);
  console.log(`wrote ${Object.keys(sorted).length} schemas from ${source} (blob ${blob})`);
}
