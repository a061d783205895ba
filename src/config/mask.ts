import type { Config } from "./schema.js";

const secretKeys = new Set(["api_key", "jwt_secret", "password", "token"]);

function maskUrlPassword(value: string): string {
  try {
    const url = new URL(value);
    if (!url.password) return value;
    url.password = "****";
    return url.toString();
  } catch {
    return value;
  }
}

/** The resolved config with every secret replaced, safe to print. */
export function maskSecrets(config: Config): unknown {
  const walk = (value: unknown, key: string): unknown => {
    if (typeof value === "string") {
      if (secretKeys.has(key)) return value === "" ? "" : "****";
      if (key === "url") return maskUrlPassword(value);
      return value;
    }
    if (Array.isArray(value)) return value.map((item) => walk(item, ""));
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]));
    }
    return value;
  };
  return walk(config, "");
}
