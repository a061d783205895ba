import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";

/**
 * Validates values against a schema of a vendor's OpenAPI document: `validateOpenAI("CreateChatCompletionResponse",
 * body)` returns the errors, [] when valid; `validateAnthropic("Message", body)` likewise. The schemas come from
 * test/fixtures/{openai,anthropic}-schemas.json, extracted from `shared/reference` by
 * scripts/extract-{openai,anthropic}-schemas.mjs (the tests then need only this repository; the
 * *-fixture.test.ts files check the extracts against the reference when present).
 */

/**
 * OpenAI's document still carries the OpenAPI 3.0 keyword `nullable: true`, which a 2020-12 validator ignores;
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

function documentValidator(fixture: string, docId: string, script: string, prepare: (schemas: unknown) => unknown) {
  let ajv: Ajv2020 | undefined;
  const validators = new Map<string, ValidateFunction>();

  const load = (): Ajv2020 => {
    const { schemas } = JSON.parse(readFileSync(new URL(`../fixtures/${fixture}`, import.meta.url), "utf8")) as { schemas: unknown };
    // Hosted at the document's own JSON pointer, so its `#/components/schemas/X` refs resolve.
    const hosted = { $id: docId, components: { schemas: prepare(schemas) } };
    // strict: false because vendor keywords (x-oaiMeta, x-stainless-*, discriminator, ...) are annotations;
    // formats such as `unixtime` are not JSON Schema formats, so they are not checked.
    const instance = new Ajv2020({ strict: false, allErrors: true, validateFormats: false, logger: false });
    instance.addSchema(hosted);
    return instance;
  };

  return (schemaName: string, value: unknown): string[] => {
    let validate = validators.get(schemaName);
    if (!validate) {
      ajv ??= load();
      validate = ajv.getSchema(`${docId}#/components/schemas/${schemaName}`);
      if (!validate) throw new Error(`No schema named ${schemaName}: add it to ROOTS in ${script}`);
      validators.set(schemaName, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
  };
}

export const validateOpenAI = documentValidator("openai-schemas.json", "openai-openapi", "scripts/extract-openai-schemas.mjs", allowNullables);

export const validateAnthropic = documentValidator("anthropic-schemas.json", "anthropic-openapi", "scripts/extract-anthropic-schemas.mjs", (s) => s);
