import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import type { Vendor } from "../../src/openapi/operation.js";
import { embedOpenApiSchemas } from "../../src/openapi/vendor-schemas.js";

/**
 * Validates values against a schema of a vendor's OpenAPI document: `validateOpenAI("CreateChatCompletionResponse",
 * body)` or `validateAnthropic("Message", body)` returns the errors, [] when valid. The schemas come from
 * vendor-schemas/<vendor>-schemas.json, extracted from `shared/reference/<vendor>/` by
 * scripts/extract-<vendor>-schemas.mjs (the tests then need only this repository;
 * test/unit/reference-schemas.test.ts checks the extracts against the reference when present). They are read
 * as the API description embeds them (src/openapi/vendor-schemas.ts): named `<vendor>.<Name>`, with OpenAI's
 * OpenAPI 3.0 `nullable: true` in the 3.1 form a 2020-12 validator understands.
 */

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
function openaiAsSent(schemas: Record<string, unknown>): void {
  allowNullIn(schemas, "openai.Response", "usage");
}

/**
 * An Ajv instance holding `components` at the JSON pointers of a document named `id`, so its
 * `#/components/schemas/X` refs resolve. strict: false because vendor keywords (x-oaiMeta, discriminator, ...)
 * are annotations; formats such as `unixtime` are not JSON Schema formats, so they are not checked.
 */
export function hostComponents(id: string, components: Record<string, unknown>): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false, logger: false });
  ajv.addSchema({ $id: id, components });
  return ajv;
}

/** A validation's errors, one line each; [] when `value` is valid. */
export function errorsOf(validate: ValidateFunction, value: unknown): string[] {
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
}

type Validate = (schemaName: string, value: unknown) => string[];

function documentValidator(vendor: Vendor, asSent: (schemas: Record<string, unknown>) => void = () => {}): Validate {
  const docId = `${vendor}-openapi`;
  let ajv: Ajv2020 | undefined;
  const validators = new Map<string, ValidateFunction>();

  function load(): Ajv2020 {
    const fixture = new URL(`../../vendor-schemas/${vendor}-schemas.json`, import.meta.url);
    const { schemas } = JSON.parse(readFileSync(fixture, "utf8")) as { schemas: Record<string, unknown> };
    const embedded = embedOpenApiSchemas(vendor, schemas);
    asSent(embedded);
    return hostComponents(docId, { schemas: embedded });
  }

  function validatorFor(schemaName: string): ValidateFunction {
    let validate = validators.get(schemaName);
    if (!validate) {
      ajv ??= load();
      validate = ajv.getSchema(`${docId}#/components/schemas/${vendor}.${schemaName}`);
      if (!validate) throw new Error(`No schema named ${schemaName}: add it to ROOTS in scripts/extract-${vendor}-schemas.mjs`);
      validators.set(schemaName, validate);
    }
    return validate;
  }

  return (schemaName, value) => errorsOf(validatorFor(schemaName), value);
}

export const validateOpenAI = documentValidator("openai", openaiAsSent);
export const validateAnthropic = documentValidator("anthropic");
