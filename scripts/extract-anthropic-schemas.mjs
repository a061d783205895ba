// Writes vendor-schemas/anthropic-schemas.json: the schemas of Anthropic's OpenAPI document (../shared/reference)
// that the API description embeds (GET /openapi.json) and the tests validate against, with everything they
// reference, so the gateway and its tests need only this repository.
// Re-run after adding a root schema or when the reference document changes:
//   node scripts/extract-anthropic-schemas.mjs [path/to/openapi.json]
import { readFileSync } from "node:fs";
import path from "node:path";
import { writeSchemaExtract } from "./lib/schema-extract.mjs";

const ROOTS = ["CreateMessageParams", "Message", "MessageStreamEvent", "ErrorResponse", "ListResponse_ModelInfo_", "ModelInfo"];

const source = path.resolve(process.argv[2] ?? "../shared/reference/anthropic/openapi.json");
writeSchemaExtract({
  source,
  label: "shared/reference/anthropic/openapi.json",
  schemas: JSON.parse(readFileSync(source, "utf8")).components.schemas,
  roots: ROOTS,
  out: "vendor-schemas/anthropic-schemas.json",
});
