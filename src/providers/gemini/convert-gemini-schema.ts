import { asObject } from "../json-guards.js";

// Gemini's `Schema` (an OpenAPI 3.0 subset: upper-case type enum, `nullable`, int64 limits written as strings
// in proto3 JSON) → the JSON Schema an OpenAI function's `parameters` take.

const INT64_LIMITS = new Set(["minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"]);
/** Gemini-only keys with no JSON Schema meaning. */
const DROPPED = new Set(["nullable", "propertyOrdering", "example"]);

const camel = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

export function convertGeminiSchema(schema: unknown): Record<string, unknown> {
  const source = asObject(schema);
  if (!source) return {};
  const out = new Map<string, unknown>();
  for (const [rawKey, value] of Object.entries(source)) {
    const key = camel(rawKey);
    if (DROPPED.has(key)) continue;
    if (key === "type") {
      if (typeof value === "string" && value !== "TYPE_UNSPECIFIED") out.set("type", value.toLowerCase());
    } else if (key === "properties") {
      const properties = asObject(value) ?? {};
      out.set(key, Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, convertGeminiSchema(property)])));
    } else if (key === "items") {
      out.set(key, convertGeminiSchema(value));
    } else if (key === "anyOf") {
      out.set(key, Array.isArray(value) ? value.map(convertGeminiSchema) : []);
    } else if (INT64_LIMITS.has(key) && typeof value === "string" && /^\d+$/.test(value)) {
      out.set(key, Number(value));
    } else {
      out.set(key, value);
    }
  }
  const type = out.get("type");
  if (source.nullable === true && typeof type === "string") out.set("type", [type, "null"]);
  return Object.fromEntries(out);
}
