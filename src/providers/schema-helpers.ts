import { z } from "zod";

// zod building blocks for the client request schemas of the foreign protocols. Their point is error paths:
// a hostile or mistaken body gets an error naming the exact field, which zod's plain unions cannot give
// (a failing union reports only "Invalid input" at its own path).

/** A kind no schema knows yet: accepted as it is, so a newer API's additions stay valid input. */
type UnknownKind = { type: string; [field: string]: unknown };

type KnownKinds<T extends Record<string, z.ZodType>> = { [K in keyof T]: z.output<T[K]> }[keyof T];

function forward(ctx: z.RefinementCtx, error: z.ZodError): typeof z.NEVER {
  for (const issue of error.issues) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
  return z.NEVER;
}

/**
 * Objects told apart by `type`: known kinds are validated by their own schema, unknown kinds pass unchanged.
 * `defaultKind` is the kind of an object without `type` (Anthropic's custom tools); without it `type` is
 * required.
 */
export function openUnion<T extends Record<string, z.ZodType>>(known: T, defaultKind?: string) {
  const base = z.looseObject({ type: defaultKind === undefined ? z.string() : z.string().optional() });
  return base.transform((value, ctx): KnownKinds<T> | UnknownKind => {
    const kind = value.type ?? defaultKind ?? "";
    return knownKind(known, kind, value, ctx) as KnownKinds<T> | UnknownKind;
  });
}

/** As openUnion, told apart by another field (OpenAI chat messages by `role`); the field is required. */
export function openUnionOn<T extends Record<string, z.ZodType>>(field: string, known: T) {
  return z.looseObject({ [field]: z.string() }).transform((value, ctx): KnownKinds<T> | Record<string, unknown> => {
    return knownKind(known, value[field] as string, value, ctx) as KnownKinds<T> | Record<string, unknown>;
  });
}

function knownKind(known: Record<string, z.ZodType>, kind: string, value: Record<string, unknown>, ctx: z.RefinementCtx): unknown {
  const schema = Object.hasOwn(known, kind) ? known[kind] : undefined;
  if (!schema) return value;
  const result = schema.safeParse(value);
  return result.success ? result.data : forward(ctx, result.error);
}

/** A string, or an array of `item`; `message` names both when the value is neither. */
export function stringOrArray<T extends z.ZodType>(item: T, message: string) {
  const list = z.array(item);
  return z.unknown().transform((value, ctx): string | z.output<T>[] => {
    if (typeof value === "string") return value;
    if (!Array.isArray(value)) {
      ctx.addIssue({ code: "custom", message });
      return z.NEVER;
    }
    const result = list.safeParse(value);
    return result.success ? result.data : forward(ctx, result.error);
  });
}

const snakeToCamel = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * A protobuf message in JSON: proto3 JSON parsers accept the original snake_case field names as well as the
 * lowerCamelCase ones (Google's own REST examples use both), so keys are camel-cased before the check. Only this
 * object's own keys: nested user data (function args, schemas' property names) is never renamed.
 */
export function protoMessage<T extends z.core.$ZodLooseShape>(shape: T) {
  return z.preprocess((value) => {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
    // A Map, then fromEntries: a "__proto__" key stays a plain key instead of reaching the object's prototype.
    const fields = new Map<string, unknown>();
    for (const [key, field] of Object.entries(value)) {
      const camel = snakeToCamel(key);
      if (!fields.has(camel) || camel === key) fields.set(camel, field);
    }
    return Object.fromEntries(fields);
  }, z.looseObject(shape));
}

/** A repeated proto field, where Google's parsers also take a lone object for a one-element list. */
export function repeated<T extends z.ZodType>(item: T, min = 0) {
  return z.preprocess(
    (value) => (value !== null && typeof value === "object" && !Array.isArray(value) ? [value] : value),
    z.array(item).min(min),
  );
}
