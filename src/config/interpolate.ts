// `${NAME}` and `${NAME:-default}` in string values. Applied to parsed YAML scalars (never to raw text), so an
// environment value can never inject YAML structure. `$${` escapes a literal `${`.

export class InterpolationError extends Error {
  constructor(
    readonly path: (string | number)[],
    message: string,
  ) {
    super(message);
  }
}

const pattern = /\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

const wholePlaceholder = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$/;

// A value that is one placeholder and nothing else takes the type its text spells (`port: ${PORT}` is a
// number), as if the text had been written in the file.
function typed(text: string): unknown {
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (text === "true" || text === "false") return text === "true";
  return text;
}

/** The value for `${NAME}` when NAME is unset and has no default, or undefined to fail (InterpolationError). */
export type UnsetVariable = (path: (string | number)[], name: string) => string | undefined;

const failOnUnset: UnsetVariable = () => undefined;

export function interpolate(
  value: unknown,
  env: NodeJS.ProcessEnv,
  path: (string | number)[] = [],
  unset: UnsetVariable = failOnUnset,
): unknown {
  if (typeof value === "string") {
    const whole = wholePlaceholder.test(value);
    const replaced = value.replace(pattern, (whole, escaped: string | undefined, name: string, fallback: string | undefined) => {
      if (escaped) return whole.slice(1);
      const found = env[name];
      if (found !== undefined && found !== "") return found;
      if (fallback !== undefined) return fallback;
      const instead = unset(path, name);
      if (instead === undefined) throw new InterpolationError(path, `environment variable ${name} is not set`);
      return instead;
    });
    return whole ? typed(replaced) : replaced;
  }
  if (Array.isArray(value)) return value.map((item, i) => interpolate(item, env, [...path, i], unset));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item, env, [...path, key], unset)]));
  }
  return value;
}

/** Every `${NAME}` of the document whose variable is unset and has no default, in document order. */
export function unsetVariables(value: unknown, env: NodeJS.ProcessEnv): { path: (string | number)[]; name: string }[] {
  const found: { path: (string | number)[]; name: string }[] = [];
  interpolate(value, env, [], (path, name) => {
    found.push({ path, name });
    return "";
  });
  return found;
}
