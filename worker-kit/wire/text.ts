import { z } from "zod";

// Text the gateway may store or hand to SQL (a wire module: zod only, so every layer and worker-kit may use it).
// PostgreSQL refuses NUL in text and a lone surrogate cannot be encoded as UTF-8: either one, let through, makes
// the statement fail with a 500 whose driver error quotes the parameters (docs/security.md, "Input validation and
// logs"). Refusing them here makes it a 400 that names the field.

/** The longest identifier the gateway accepts (model names, aliases, user-supplied IDs) unless a route says less. */
export const IDENTIFIER_MAX_CHARS = 256;

export const INVALID_TEXT_MESSAGE = "must be well-formed Unicode text without NUL characters";

/** True when `value` can be stored as PostgreSQL text: well-formed UTF-16 and no NUL. */
export const isStorableText = (value: string): boolean => value.isWellFormed() && !value.includes("\0");

/** A string that reaches the database: refused at validation when it is not storable. */
export const storedText = () => z.string().refine(isStorableText, { error: INVALID_TEXT_MESSAGE, abort: true });

/** A name or ID the client chooses (a model, an alias, a user-supplied ID): non-empty, bounded, storable. */
export const identifier = (max: number = IDENTIFIER_MAX_CHARS) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
    .min(1, { error: "must not be empty" })
    .max(max, { error: `must be at most ${max} characters` })
    .refine(isStorableText, { error: INVALID_TEXT_MESSAGE });

/** What is wrong with an identifier taken outside a schema (a model in the path), or undefined when nothing is. */
export function identifierProblem(value: string, max: number = IDENTIFIER_MAX_CHARS): string | undefined {
  if (value.length > max) return `must be at most ${max} characters`;
  return isStorableText(value) ? undefined : INVALID_TEXT_MESSAGE;
}

/**
 * The path of the first string in a parsed JSON value (keys included) that is not storable text, or undefined.
 * Iterative, so a deeply nested body cannot overflow the stack; `messages[0].role` style, as errors report `param`.
 * Strings at a path `scrubbed` matches are skipped: the route cleans them itself before storing them.
 */
export function firstInvalidText(value: unknown, scrubbed?: RegExp): string | undefined {
  const stack: [unknown, string][] = [[value, ""]];
  while (stack.length > 0) {
    const [current, path] = stack.pop()!;
    if (typeof current === "string") {
      if (!isStorableText(current) && !scrubbed?.test(path)) return path;
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push([current[i], `${path}[${i}]`]);
    } else if (current !== null && typeof current === "object") {
      const keys = Object.keys(current);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        const at = path ? `${path}.${key}` : key;
        if (!isStorableText(key)) return path || "(key)";
        stack.push([(current as Record<string, unknown>)[key], at]);
      }
    }
  }
  return undefined;
}
