import type { Vendor } from "./operation.js";

// The vendors' descriptions of their wire shapes, made ready to embed in our OpenAPI 3.1 document: their schemas
// renamed `<vendor>.<Name>` (references rewritten to match), OpenAI's 3.0 `nullable` turned into the 3.1 form,
// and the Gemini protos turned into JSON Schema by the proto3 JSON mapping. Pure: the files are read by the caller.

type Json = Record<string, unknown>;

const REF_PREFIX = "#/components/schemas/";

/**
 * A vendor's schema tree with every `$ref` renamed into our components, and `nullable: true` (OpenAPI 3.0, which
 * a 3.1 reader ignores) made `anyOf [schema, null]`, the meaning the vendor wrote it with. No vendor schema has a
 * property named `nullable`, so the keyword is never a property name here.
 */
function embedNode(node: unknown, vendor: Vendor): unknown {
  if (Array.isArray(node)) return node.map((item) => embedNode(item, vendor));
  if (node === null || typeof node !== "object") return node;
  const out: Json = {};
  let nullable = false;
  for (const [key, value] of Object.entries(node as Json)) {
    if (key === "nullable") nullable = value === true;
    else if (key === "$ref" && typeof value === "string" && value.startsWith(REF_PREFIX))
      out.$ref = `${REF_PREFIX}${vendor}.${value.slice(REF_PREFIX.length)}`;
    else out[key] = embedNode(value, vendor);
  }
  return nullable ? { anyOf: [out, { type: "null" }] } : out;
}

/** An extract of a vendor's OpenAPI `components.schemas` (vendor-schemas/<vendor>-schemas.json), embedded. */
export function embedOpenApiSchemas(vendor: Vendor, schemas: Json): Json {
  const out: Json = {};
  for (const [name, schema] of Object.entries(schemas)) out[`${vendor}.${name}`] = embedNode(schema, vendor);
  return out;
}

interface ProtoField {
  type: string;
  repeated: boolean;
}

/** vendor-schemas/gemini-proto.json: messages (field name in proto3 JSON → type) and enums, by full name. */
export interface ProtoExtract {
  messages: Record<string, Record<string, ProtoField>>;
  enums: Record<string, string[]>;
}

// proto3 JSON: 64-bit integers are decimal strings (numbers are accepted too), bytes base64, Struct any object.
const int64 = { anyOf: [{ type: "integer" }, { type: "string", pattern: "^-?[0-9]+$" }] };
const SCALARS: Record<string, Json> = {
  string: { type: "string" },
  bytes: { type: "string", contentEncoding: "base64" },
  bool: { type: "boolean" },
  int32: { type: "integer" },
  uint32: { type: "integer", minimum: 0 },
  int64,
  uint64: int64,
  float: { type: "number" },
  double: { type: "number" },
  "google.protobuf.Struct": { type: "object" },
  "google.protobuf.Value": {},
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]+)?s$" },
  "google.protobuf.Timestamp": { type: "string", format: "date-time" },
};

/** A type name as protoc resolves it: from the innermost enclosing scope outwards. */
function resolve(proto: ProtoExtract, type: string, scope: string): string | null {
  const parts = scope.split(".");
  for (let i = parts.length; i >= 0; i--) {
    const name = [...parts.slice(0, i), type].join(".");
    if (proto.messages[name] || proto.enums[name]) return name;
  }
  return null;
}

/**
 * JSON Schemas of `roots` and every message and enum they use, named `gemini.<Full.Name>`. Every proto field is
 * optional. A type from outside the four copied files (google.type.*, retriever.proto) is left open.
 */
export function protoJsonSchemas(proto: ProtoExtract, roots: readonly string[]): Json {
  const out: Json = {};
  const ref = (name: string) => ({ $ref: `${REF_PREFIX}gemini.${name}` });

  const typeSchema = (type: string, scope: string): Json => {
    const scalar = SCALARS[type];
    if (scalar) return scalar;
    const map = /^map<\s*\w+\s*,\s*([\w.]+)\s*>$/.exec(type);
    if (map) return { type: "object", additionalProperties: typeSchema(map[1]!, scope) };
    const name = resolve(proto, type, scope);
    if (!name) return { description: `${type}: a message of the Gemini API outside the copied protos.` };
    visit(name);
    return ref(name);
  };

  const visit = (name: string) => {
    if (name in out) return;
    const values = proto.enums[name];
    if (values) {
      out[name] = { type: "string", enum: values };
      return;
    }
    const message: Json = { type: "object" };
    out[name] = message;
    const properties: Json = {};
    for (const [field, { type, repeated }] of Object.entries(proto.messages[name]!)) {
      const schema = typeSchema(type, name);
      properties[field] = repeated ? { type: "array", items: schema } : schema;
    }
    message.properties = properties;
  };

  for (const root of roots) {
    if (!proto.messages[root]) throw new Error(`the Gemini protos have no message ${root}`);
    visit(root);
  }
  const sorted: Json = {};
  for (const name of Object.keys(out).sort()) sorted[`gemini.${name}`] = out[name];
  return sorted;
}
