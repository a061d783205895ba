import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";

/**
 * Validates values against a schema of a vendor's OpenAPI document: `validateOpenAI("CreateChatCompletionResponse",
 * body)` or `validateAnthropic("Message", body)` returns the errors, [] when valid. The schemas come from
 * vendor-schemas/<vendor>-schemas.json, extracted from `shared/reference/<vendor>/` by
 * scripts/extract-<vendor>-schemas.mjs (the tests then need only this repository;
 * test/unit/reference-schemas.test.ts checks the extracts against the reference when present).
 */

/**
 * The OpenAI document still carries the OpenAPI 3.0 keyword `nullable: true`, which a 2020-12 validator
 * ignores; wrapping such a schema in `anyOf [schema, null]` restores its meaning even next to `$ref` or `enum`.
 * (No schema in the document has a property called `nullable`, so the keyword can be stripped wherever it
 * appears.)
 */
function allowNullables(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(allowNullables);
  if (node === null || typeof node !== "object") return node;
  const { nullable, ...rest } = node as Record<string, unknown>;
  const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, allowNullables(v)]));
  return nullable === true ? { anyOf: [out, { type: "null" }] } : out;
}

/** Lets `property` of `schema` (or of one of its `allOf` parts) be null too. */
function allowNullIn(schemas: Record<string, unknown>, schema: string, property: string): void {
  type Node = { properties?: Record<string, unknown>; allOf?: Node[] };
  const node = schemas[schema] as Node | undefined;
  const owner = [node, ...(node?.allOf ?? [])].find((n) => n?.properties?.[property] !== undefined);
  if (!owner?.properties) throw new Error(`${schema} has no property ${property}`);
  owner.properties[property] = { anyOf: [owner.properties[property], { type: "null" }] };
}

/**
 * OpenAI fields the document types without null although the API sends null, as its own examples show
 * (shared/reference/README.md, "Reading notes"): a `Response`'s `usage` until the response is done.
 */
function openaiAsSent(schemas: Record<string, unknown>): Record<string, unknown> {
  const patched = allowNullables(schemas) as Record<string, unknown>;
  allowNullIn(patched, "Response", "usage");
  return patched;
}

type Validate = (schemaName: string, value: unknown) => string[];

function documentValidator(vendor: string, prepare: (schemas: Record<string, unknown>) => Record<string, unknown>): Validate {
  const docId = `${vendor}-openapi`;
  let ajv: Ajv2020 | undefined;
  const validators = new Map<string, ValidateFunction>();

  function load(): Ajv2020 {
    const fixture = new URL(`../../vendor-schemas/${vendor}-schemas.json`, import.meta.url);
    const { schemas } = JSON.parse(readFileSync(fixture, "utf8")) as { schemas: Record<string, unknown> };
    // Hosted at the document's own JSON pointer, so its `#/components/schemas/X` refs resolve.
    const hosted = { $id: docId, components: { schemas: prepare(schemas) } };
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
      validate = ajv.getSchema(`${docId}#/components/schemas/${schemaName}`);
      if (!validate) throw new Error(`No schema named ${schemaName}: add it to ROOTS in scripts/extract-${vendor}-schemas.mjs`);
      validators.set(schemaName, validate);
    }
    return validate;
  }

  return (schemaName, value) => {
    const validate = validatorFor(schemaName);
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
  };
}

export const validateOpenAI = documentValidator("openai", openaiAsSent);
export const validateAnthropic = documentValidator("anthropic", (schemas) => schemas);
