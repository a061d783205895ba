import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";

/**
 * Validates values against a schema of OpenAI's OpenAPI document: `validateOpenAI("CreateChatCompletionResponse",
 * body)` returns the errors, [] when valid. The schemas come from test/fixtures/openai-schemas.json, extracted
 * from `shared/reference/openai/openapi.yaml` by scripts/extract-openai-schemas.mjs (the tests then need only
 * this repository; test/unit/openai-fixture.test.ts checks the extract against the reference when present).
 */

const FIXTURE = new URL("../fixtures/openai-schemas.json", import.meta.url);
const DOC_ID = "openai-openapi";

/**
 * The document still carries the OpenAPI 3.0 keyword `nullable: true`, which a 2020-12 validator ignores;
 * wrapping such a schema in `anyOf [schema, null]` restores its meaning even next to `$ref` or `enum`. (No
 * schema in the document has a property called `nullable`, so the keyword can be stripped wherever it appears.)
 */
function allowNullables(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(allowNullables);
  if (node === null || typeof node !== "object") return node;
  const { nullable, ...rest } = node as Record<string, unknown>;
  const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, allowNullables(v)]));
  return nullable === true ? { anyOf: [out, { type: "null" }] } : out;
}

/**
 * Fields the document types without null although the API sends null, as its own examples show
 * (shared/reference/README.md, "Reading notes"): a `Response`'s `usage` until the response is done.
 */
const NULL_IN_PRACTICE: [schema: string, property: string][] = [["Response", "usage"]];

/** Lets `property` of `schema` (or of one of its `allOf` parts) be null too. */
function allowNullIn(schemas: Record<string, unknown>, [schema, property]: [string, string]): void {
  type Node = { properties?: Record<string, unknown>; allOf?: Node[] };
  const node = schemas[schema] as Node | undefined;
  const owner = [node, ...(node?.allOf ?? [])].find((n) => n?.properties?.[property] !== undefined);
  if (!owner?.properties) throw new Error(`${schema} has no property ${property}`);
  owner.properties[property] = { anyOf: [owner.properties[property], { type: "null" }] };
}

let ajv: Ajv2020 | undefined;
const validators = new Map<string, ValidateFunction>();

function load(): Ajv2020 {
  const { schemas } = JSON.parse(readFileSync(FIXTURE, "utf8")) as { schemas: Record<string, unknown> };
  const patched = allowNullables(schemas) as Record<string, unknown>;
  for (const field of NULL_IN_PRACTICE) allowNullIn(patched, field);
  // Hosted at the document's own JSON pointer, so its `#/components/schemas/X` refs resolve.
  const hosted = { $id: DOC_ID, components: { schemas: patched } };
  // strict: false because vendor keywords (x-oaiMeta, discriminator, ...) are annotations; formats such as
  // `unixtime` are not JSON Schema formats, so they are not checked.
  const instance = new Ajv2020({ strict: false, allErrors: true, validateFormats: false, logger: false });
  instance.addSchema(hosted);
  return instance;
}

function validatorFor(schemaName: string): ValidateFunction {
  let validate = validators.get(schemaName);
  if (!validate) {
    ajv ??= load();
    validate = ajv.getSchema(`${DOC_ID}#/components/schemas/${schemaName}`);
    if (!validate) throw new Error(`No schema named ${schemaName}: add it to ROOTS in scripts/extract-openai-schemas.mjs`);
    validators.set(schemaName, validate);
  }
  return validate;
}

export function validateOpenAI(schemaName: string, value: unknown): string[] {
  const validate = validatorFor(schemaName);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
}
