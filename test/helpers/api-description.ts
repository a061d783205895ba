import type { ValidateFunction } from "ajv/dist/2020.js";
import { errorsOf, hostComponents } from "./openapi.js";

// Reads the gateway's own API description (GET /openapi.json): the routes it describes, for the route-coverage
// test, and a validator of real answers against the response schemas it gives for an operation.

type Json = Record<string, unknown>;
type Operation = { responses: Record<string, { content?: Record<string, { schema?: Json }> }>; "x-route"?: string };
type Document = { paths: Record<string, Record<string, Operation>>; components: Json };

const METHODS = ["get", "post", "put", "patch", "delete"];

/** One form for a Hono pattern (`/keys/:id/revoke`, `/models/:target{.+}`) and an OpenAPI template (`/keys/{id}/revoke`). */
export const canonicalPath = (path: string) => path.replace(/:\w+(\{[^}]*\})?/g, "{}").replace(/\{\w+\}/g, "{}");

/** `METHOD path` of every operation, in canonical form; a template served by another Hono pattern (`x-route`) as that pattern. */
export function describedRoutes(document: Document): Set<string> {
  const routes = new Set<string>();
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) routes.add(`${method.toUpperCase()} ${canonicalPath(op["x-route"] ?? path)}`);
    }
  }
  return routes;
}

/**
 * Hono's route table as `METHOD path`, without middleware (a `use` is an ALL route on a wildcard path). A route
 * for every method (`all`) is `ALL path`.
 */
export function servedRoutes(routes: readonly { method: string; path: string }[]): Set<string> {
  return new Set(routes.filter((r) => !(r.method === "ALL" && r.path.includes("*"))).map((r) => `${r.method} ${canonicalPath(r.path)}`));
}

/** What is served and not described, and what is described and not served. ALL matches any described method. */
export function coverageGaps(served: Set<string>, described: Set<string>): { undescribed: string[]; unserved: string[] } {
  const pathOf = (route: string) => route.slice(route.indexOf(" ") + 1);
  const servedAll = new Set([...served].filter((r) => r.startsWith("ALL ")).map(pathOf));
  const describedPaths = new Set([...described].map(pathOf));
  return {
    undescribed: [...served].filter((r) => (r.startsWith("ALL ") ? !describedPaths.has(pathOf(r)) : !described.has(r))).sort(),
    unserved: [...described].filter((r) => !served.has(r) && !servedAll.has(pathOf(r))).sort(),
  };
}

/** Validates a JSON answer against the schema the document gives for `method path` and its status. */
export function answerValidator(document: Document) {
  const ajv = hostComponents("gateway", document.components);
  const cache = new Map<string, ValidateFunction>();
  return (method: string, path: string, status: number, body: unknown): string[] => {
    const key = `${method} ${path} ${status}`;
    let validate = cache.get(key);
    if (!validate) {
      const response = document.paths[path]?.[method.toLowerCase()]?.responses[String(status)];
      if (!response) throw new Error(`the description has no ${status} answer for ${key}`);
      const schema = response.content?.["application/json"]?.schema;
      if (!schema) throw new Error(`the ${status} answer of ${method} ${path} has no JSON schema`);
      validate = ajv.compile({ $ref: `gateway${String(schema.$ref ?? "")}` });
      cache.set(key, validate);
    }
    return errorsOf(validate, body);
  };
}
