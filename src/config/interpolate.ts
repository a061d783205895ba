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

export function interpolate(value: unknown, env: NodeJS.ProcessEnv, path: (string | number)[] = []): unknown {
  if (typeof value === "string") {
    const whole = wholePlaceholder.test(value);
    const replaced = value.replace(pattern, (whole, escaped: string | undefined, name: string, fallback: string | undefined) => {
      if (escaped) return whole.slice(1);
      const found = env[name];
      if (found !== undefined && found !== "") return found;
      if (fallback !== undefined) return fallback;
      throw new InterpolationError(path, `environment variable ${name} is not set`);
    });
    return whole ? typed(replaced) : replaced;
  }
  if (Array.isArray(value)) return value.map((item, i) => interpolate(item, env, [...path, i]));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item, env, [...path, key])]));
  }
  return value;
}
