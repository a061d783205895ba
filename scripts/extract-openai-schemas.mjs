// Writes vendor-schemas/openai-schemas.json: the schemas of OpenAI's OpenAPI document (../shared/reference)
// that the API description embeds (GET /openapi.json) and the tests validate against, with everything they
// reference, so the gateway and its tests need only this repository.
// Re-run after adding a root schema or when the reference document changes:
//   node scripts/extract-openai-schemas.mjs [path/to/openapi.yaml]
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { writeSchemaExtract } from "./lib/schema-extract.mjs";

const ROOTS = [
  "ErrorResponse",
  "ListModelsResponse",
  "CreateChatCompletionResponse",
  "CreateChatCompletionStreamResponse",
  "CreateEmbeddingResponse",
  "Response",
  "ResponseStreamEvent",
  "ImagesResponse",
  "ImageGenStreamEvent",
  "ImageEditStreamEvent",
  "CreateChatCompletionRequest",
  "CreateResponse",
  "CreateEmbeddingRequest",
  "VideoResource",
  "CreateVideoJsonBody",
];

const source = path.resolve(process.argv[2] ?? "../shared/reference/openai/openapi.yaml");
writeSchemaExtract({
  source,
  label: "shared/reference/openai/openapi.yaml",
  schemas: parse(readFileSync(source, "utf8")).components.schemas,
  roots: ROOTS,
  out: "vendor-schemas/openai-schemas.json",
});
