import { readFileSync } from "node:fs";
import path from "node:path";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { parse } from "yaml";

/**
 * Validates values against a schema of OpenAI's OpenAPI document (`shared/reference/openai/openapi.yaml`, beside the checkout):
 * `validateOpenAI("CreateChatCompletionResponse", body)` returns the errors, [] when valid.
 */

// CI clones the repository with shared/ beside it, as on a developer's machine.
const SPEC_PATH = path.resolve(process.env.GATEWAY_SHARED_DIR ?? path.join(process.cwd(), "..", "shared"), "reference/openai/openapi.yaml");
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

let ajv: Ajv2020 | undefined;
const validators = new Map<string, ValidateFunction>();

function load(): Ajv2020 {
  const doc = parse(readFileSync(SPEC_PATH, "utf8")) as { components: { schemas: Record<string, unknown> } };
  // Only components.schemas is hosted, at its own JSON pointer, so the document's `#/components/schemas/X` refs
  // resolve; the paths section would only slow compilation down.
  const hosted = { $id: DOC_ID, components: { schemas: allowNullables(doc.components.schemas) } };
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
    if (!validate) throw new Error(`No schema named ${schemaName} in ${SPEC_PATH}`);
    validators.set(schemaName, validate);
  }
  return validate;
}

export function validateOpenAI(schemaName: string, value: unknown): string[] {
  const validate = validatorFor(schemaName);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
}
