import { readFileSync } from "node:fs";
import { parse as parseYaml, YAMLParseError } from "yaml";
import { z } from "zod";
import { configSchema, type Config } from "./schema.js";
import { interpolate, unsetVariables } from "./interpolate.js";

/** One thing wrong with a config: `path` names the field (`models.gpt-4o.targets.0`), or "" for the file. */
export interface ConfigProblem {
  path: string;
  reason: string;
}

/**
 * A config that cannot be used: its first problem is `path` and `reason` (the one line of a failing command),
 * `problems` all of them (`config check` lists every one, so that fixing a file takes one round).
 */
export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];
  constructor(
    readonly path: string,
    readonly reason: string,
    readonly file: string,
    more: readonly ConfigProblem[] = [],
  ) {
    const others = more.length > 0 ? ` (and ${more.length} more: \`gateway config check\` lists them)` : "";
    super(`invalid config ${file}${path ? ` at ${path}` : ""}: ${reason}${others}`);
    this.name = "ConfigError";
    this.problems = [{ path, reason }, ...more];
  }
}

export const dotted = (path: readonly PropertyKey[]) => path.map(String).join(".");

export interface ParseOptions {
  /**
   * A provider's `api_key` whose variable is unset becomes "" instead of an error: only `serve` calls
   * providers, so admin commands must not need their secrets.
   */
  deferProviderSecrets?: boolean;
}

const isProviderSecret = (path: (string | number)[]) => path.length === 3 && path[0] === "providers" && path[2] === "api_key";

/** Validates an already-parsed document (YAML or the built-in demo object). */
export function parseConfig(raw: unknown, file: string, env: NodeJS.ProcessEnv = process.env, options: ParseOptions = {}): Config {
  const deferred = (path: (string | number)[]) => !!options.deferProviderSecrets && isProviderSecret(path);
  const unset = unsetVariables(raw ?? {}, env).filter((u) => !deferred(u.path));
  if (unset.length > 0) {
    // Every unset variable in the one line, so fixing the environment takes one round, not one per variable.
    const [first, ...rest] = unset;
    const also = rest.length > 0 ? `; also unset: ${rest.map((u) => `${u.name} (at ${dotted(u.path)})`).join(", ")}` : "";
    throw new ConfigError(dotted(first!.path), `environment variable ${first!.name} is not set${also}`, file);
  }
  // What is still unset here is a deferred provider secret.
  const resolved = interpolate(raw ?? {}, env, [], () => "");
  const result = configSchema.safeParse(resolved);
  if (!result.success) {
    const [first, ...rest] = result.error.issues.map((issue) => ({ path: dotted(issue.path), reason: describeIssue(issue, resolved) }));
    throw new ConfigError(first!.path, first!.reason, file, rest);
  }
  return result.data;
}

/**
 * The value at `path` in `doc`, or undefined where the path leaves it. Own members only: a key the file lacks
 * must read as missing even when every object has it (`constructor`, `toString`).
 */
function valueAt(doc: unknown, path: readonly PropertyKey[]): unknown {
  let at = doc;
  for (const key of path) {
    if (at === null || typeof at !== "object" || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<PropertyKey, unknown>)[key];
  }
  return at;
}

const article = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);

/** zod's issue in an operator's words: "required (a number)" rather than "expected number, received undefined". */
function describeIssue(issue: z.core.$ZodIssue, doc: unknown): string {
  if (issue.code === "unrecognized_keys") return `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")}`;
  if (issue.code === "invalid_type") {
    const value = valueAt(doc, issue.path);
    if (value === undefined) return `required (${article(issue.expected)})`;
    const got = value === null ? "null" : Array.isArray(value) ? "a list" : article(typeof value);
    return `must be ${article(issue.expected)}, not ${got}`;
  }
  return issue.message;
}

export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env, options: ParseOptions = {}): Config {
  return parseConfig(readConfigDocument(file), file, env, options);
}

/** The file's YAML document, not yet interpolated or validated. */
export function readConfigDocument(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError("", `cannot read file (${(err as NodeJS.ErrnoException).code ?? "error"})`, file);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    const reason = err instanceof YAMLParseError ? err.message.split("\n")[0]! : String(err);
    throw new ConfigError("", `not valid YAML: ${reason}`, file);
  }
  // An empty file (or one of comments only) is a wrong or truncated file, never a config meaning "all defaults".
  if (raw === null || raw === undefined) throw new ConfigError("", "the file is empty", file);
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw new ConfigError("", "the document must be a mapping", file);
  }
  return raw;
}
