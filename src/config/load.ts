import { readFileSync } from "node:fs";
import { parse as parseYaml, YAMLParseError } from "yaml";
import { z } from "zod";
import { configSchema, type Config } from "./schema.js";
import { interpolate, unsetVariables } from "./interpolate.js";

/** A config that cannot be used. `path` names the failing field (`models.gpt-4o.targets.0`), or "" for the file. */
export class ConfigError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
    readonly file: string,
  ) {
    super(`invalid config ${file}${path ? ` at ${path}` : ""}: ${reason}`);
    this.name = "ConfigError";
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
    const issue = result.error.issues[0]!;
    throw new ConfigError(dotted(issue.path), describeIssue(issue), file);
  }
  return result.data;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === "unrecognized_keys") return `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")}`;
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
