// Writes vendor-schemas/gemini-proto.json: the messages and enums of the Gemini protos (../shared/reference) that
// the tests check translated answers against, as proto3 JSON sees them (lowerCamelCase field names), so the
// tests run on a machine that has only this repository. Re-run when the reference protos change:
//   node scripts/extract-gemini-proto.mjs [path/to/google/ai/generativelanguage/v1beta] [output file]
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const FILES = ["content.proto", "generative_service.proto", "safety.proto", "citation.proto"];
const dir = path.resolve(process.argv[2] ?? "../shared/reference/gemini/google/ai/generativelanguage/v1beta");

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

const messages = {};
const enums = {};
for (const file of FILES) {
  // Comments and string literals (HTTP paths such as "/v1beta/{model=models/*}") hold no structure.
  const text = readFileSync(path.join(dir, file), "utf8")
    .replace(/\/\/.*$/gm, "")
    .replace(/"(?:[^"\\]|\\.)*"/g, '""');
  // Scopes: message and enum names nest (Candidate.FinishReason); a oneof's fields belong to its message; any
  // other block (service, rpc, option values) holds nothing read here.
  const scopes = [];
  const owner = () =>
    scopes
      .filter((s) => s.kind === "message" || s.kind === "enum")
      .map((s) => s.name)
      .join(".");
  for (const raw of text.split(/(?<=[{};])/)) {
    const statement = raw.trim().replace(/\s+/g, " ");
    const open = /^(message|enum|oneof) (\w+) ?\{$/.exec(statement);
    const inner = scopes.at(-1)?.kind;
    // A field's options may open a block (`= 1 [(resource_reference) = {`): the field is read before it.
    if (!open && inner === "enum") {
      const value = /^(\w+) ?= ?\d+/.exec(statement);
      if (value) enums[owner()].push(value[1]);
    } else if (!open && (inner === "message" || inner === "oneof")) {
      const field = /^(optional |repeated )?(map<[^>]+>|[\w.]+) (\w+) ?= ?\d+/.exec(statement);
      if (field && field[2] !== "reserved") messages[owner()][camel(field[3])] = { type: field[2], repeated: field[1] === "repeated " };
    }
    if (statement.endsWith("{")) {
      scopes.push(open ? { kind: open[1], name: open[2] } : { kind: "block", name: "" });
      if (open?.[1] === "message") messages[owner()] = {};
      if (open?.[1] === "enum") enums[owner()] = [];
    } else if (statement.endsWith("}")) {
      scopes.pop();
    }
  }
}

const sortKeys = (o) =>
  Object.fromEntries(
    Object.keys(o)
      .sort()
      .map((k) => [k, o[k]]),
  );
const out = {
  source: "shared/reference/gemini/google/ai/generativelanguage/v1beta",
  files: FILES,
  messages: sortKeys(messages),
  enums: sortKeys(enums),
};
writeFileSync(process.argv[3] ?? "vendor-schemas/gemini-proto.json", `${JSON.stringify(out)}\n`);
console.log(`wrote ${Object.keys(messages).length} messages and ${Object.keys(enums).length} enums from ${dir}`);
