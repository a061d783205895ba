import type { Handler, Hono, MiddlewareHandler } from "hono";
import type { OperationDescription } from "../openapi/operation.js";
import type { AppEnv } from "./context.js";

/** What serves a route: its handler, or a middleware of its own before it (logout's session check). */
export type Served = Handler<AppEnv> | readonly [MiddlewareHandler<AppEnv>, Handler<AppEnv>];

/**
 * One route: the operations it serves, as the API description says them, and the handler that serves them, made
 * from the route's dependencies when the app is assembled. The app mounts each route at the method and path its
 * operations name (src/runtime/routes.ts is the one list), so no route is served undescribed, and none is
 * described at a path it is not served at.
 */
export interface Route<D> {
  readonly operations: readonly OperationDescription[];
  /** Answers every method at its path, not only the described one: a removed route says so whatever is sent. */
  readonly anyMethod: boolean;
  /** The handler; null where these dependencies do not serve the route (metrics off, or on an address of their own). */
  handler(deps: D): Served | null;
}

/** A route of one operation, or of several one handler serves (one body at two addresses, one pattern for two methods). */
export function route<D>(
  operations: OperationDescription | readonly OperationDescription[],
  handler: (deps: D) => Served | null,
  options: { anyMethod?: boolean } = {},
): Route<D> {
  return {
    operations: Array.isArray(operations) ? operations : [operations as OperationDescription],
    anyMethod: options.anyMethod ?? false,
    handler,
  };
}

/**
 * The Hono pattern of an operation: its own (`served`), or its OpenAPI template with `{name}` as `:name`, and as
 * `:name{pattern}` where the parameter has a pattern of its own.
 */
export function servedPattern(operation: OperationDescription): string {
  if (operation.served) return operation.served;
  const patterns = operation.paramPatterns;
  return operation.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    patterns && Object.hasOwn(patterns, name) ? `:${name}{${patterns[name]}}` : `:${name}`,
  );
}

/**
 * Mounts `routes` in their order (Hono tries overlapping patterns in the order they were added), each handler
 * made once and added once per method and pattern its operations name.
 */
export function mountRoutes<D>(app: Hono<AppEnv>, routes: readonly Route<D>[], deps: D): void {
  // Hono's typed overloads of `on` cannot take a handler list of a length known only at run time.
  const add = app.on.bind(app) as (method: string, path: string, ...handlers: (Handler<AppEnv> | MiddlewareHandler<AppEnv>)[]) => unknown;
  for (const each of routes) {
    const made = each.handler(deps);
    if (!made) continue;
    const handlers = typeof made === "function" ? [made] : made;
    const added = new Set<string>();
    for (const operation of each.operations) {
      const method = each.anyMethod ? "ALL" : operation.method.toUpperCase();
      const pattern = servedPattern(operation);
      if (added.has(`${method} ${pattern}`)) continue;
      added.add(`${method} ${pattern}`);
      add(method, pattern, ...handlers);
    }
  }
}
