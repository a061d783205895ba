import { z } from "zod";
import { errors } from "../errors.js";
import { validate } from "./body.js";

/** A JSON object body of any fields, read first so that `strictly` can name an unknown one. */
export const anyObject = z.record(z.string(), z.unknown());

/** A strict body whose unknown field is named in `param`, not only in the message. */
export function strictly<S extends z.ZodObject>(schema: S, value: Record<string, unknown>): z.infer<S> {
  const unknown = Object.keys(value).find((k) => !Object.hasOwn(schema.shape, k));
  if (unknown !== undefined) throw errors.badRequest(`Unknown field ${unknown}.`, unknown, "invalid_value");
  return validate(schema, value);
}
