import { readFileSync } from "node:fs";

/**
 * Checks a value against a message of the Gemini protos as proto3 JSON writes it: `validateGemini(
 * "GenerateContentResponse", body)` returns the errors, [] when valid (unknown field names, wrong JSON types,
 * enum values the proto does not name). The messages come from vendor-schemas/gemini-proto.json, extracted from
 * `shared/reference/gemini` by scripts/extract-gemini-proto.mjs (test/unit/gemini-fixture.test.ts checks it).
 * Proto fields are all optional, so required content is asserted by the tests themselves.
 */

type Field = { type: string; repeated: boolean };
type Proto = { messages: Record<string, Record<string, Field>>; enums: Record<string, string[]> };

let proto: Proto | undefined;
const load = (): Proto =>
  (proto ??= JSON.parse(readFileSync(new URL("../../vendor-schemas/gemini-proto.json", import.meta.url), "utf8")) as Proto);

const isObject = (v: unknown) => v !== null && typeof v === "object" && !Array.isArray(v);

const SCALARS: Record<string, (v: unknown) => boolean> = {
  string: (v) => typeof v === "string",
  bytes: (v) => typeof v === "string",
  bool: (v) => typeof v === "boolean",
  int32: (v) => Number.isInteger(v),
  uint32: (v) => Number.isInteger(v),
  int64: (v) => Number.isInteger(v) || (typeof v === "string" && /^-?\d+$/.test(v)),
  float: (v) => typeof v === "number",
  double: (v) => typeof v === "number",
  "google.protobuf.Struct": isObject,
  "google.protobuf.Value": () => true,
  "google.protobuf.Duration": (v) => typeof v === "string",
  "google.protobuf.Timestamp": (v) => typeof v === "string",
};

/** A type name as protoc resolves it: from the innermost enclosing scope outwards. */
function resolve(type: string, scope: string): { message: string } | { enum: string } | null {
  const { messages, enums } = load();
  const parts = scope.split(".");
  for (let i = parts.length; i >= 0; i--) {
    const name = [...parts.slice(0, i), type].join(".");
    if (messages[name]) return { message: name };
    if (enums[name]) return { enum: name };
  }
  return null;
}

function check(messageName: string, value: unknown, at: string, errors: string[]) {
  const fields = load().messages[messageName];
  if (!fields) throw new Error(`No message ${messageName} in gemini-proto.json`);
  if (!isObject(value)) {
    errors.push(`${at || "/"} is not an object (${messageName})`);
    return;
  }
  for (const [name, fieldValue] of Object.entries(value as Record<string, unknown>)) {
    const field = fields[name];
    if (!field) {
      errors.push(`${at}/${name} is not a field of ${messageName}`);
      continue;
    }
    const list = field.repeated && Array.isArray(fieldValue);
    if (field.repeated && !list) errors.push(`${at}/${name} is not a list`);
    const items = list ? (fieldValue as unknown[]) : [fieldValue];
    items.forEach((item, i) => checkValue(field.type, messageName, item, list ? `${at}/${name}/${i}` : `${at}/${name}`, errors));
  }
}

function checkValue(type: string, scope: string, value: unknown, at: string, errors: string[]) {
  const scalar = SCALARS[type];
  if (scalar) {
    if (!scalar(value)) errors.push(`${at} is not a ${type}: ${JSON.stringify(value)}`);
    return;
  }
  if (type.startsWith("map<")) {
    if (!isObject(value)) errors.push(`${at} is not a map`);
    return;
  }
  const resolved = resolve(type, scope);
  if (!resolved) throw new Error(`Unknown proto type ${type} in ${scope}`);
  if ("message" in resolved) check(resolved.message, value, at, errors);
  else if (typeof value !== "string" || !load().enums[resolved.enum]!.includes(value))
    errors.push(`${at} is not a ${resolved.enum}: ${JSON.stringify(value)}`);
}

export function validateGemini(messageName: string, value: unknown): string[] {
  const errors: string[] = [];
  check(messageName, value, "", errors);
  return errors;
}
