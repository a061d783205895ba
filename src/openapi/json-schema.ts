import { z } from "zod";

/**
 * A zod schema as JSON Schema 2020-12 (the dialect of OpenAPI 3.1), without the `$schema` line: what a request
 * accepts (`input`) or an answer holds (`output`). A custom check has no JSON Schema of its own; its `meta` says
 * what it checks.
 */
export function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" });
  return json;
}
