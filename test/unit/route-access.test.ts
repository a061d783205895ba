import { describe, expect, it } from "vitest";
import type { Access } from "../../src/openapi/operation.js";
import { CREDENTIAL_CHECKS } from "../../src/runtime/credential-checks.js";
import { apiOperations } from "../../src/runtime/routes.js";

// The app checks credentials by path (src/runtime/credential-checks.ts); each operation says in its description
// which credential it takes. The two must agree, or the description lies about a route's access.

/** The check a path is behind, as Hono matches a `use` pattern: `/v1/*` is /v1 and everything under it. */
function checkOf(path: string) {
  return CREDENTIAL_CHECKS.find((check) =>
    check.path.endsWith("/*") ? path === check.path.slice(0, -2) || path.startsWith(check.path.slice(0, -1)) : path === check.path,
  );
}

/** The operations outside every checked prefix: public ones, the metrics token's, and logout's own session check. */
const UNCHECKED = new Map<string, Access>([
  ["getIndex", "public"],
  ["getLiveness", "public"],
  ["getReadiness", "public"],
  ["getApiDescription", "public"],
  ["getMetrics", "metrics"],
  ["login", "public"],
  ["logout", "session"],
]);

describe("route access", () => {
  it("every operation under a checked path takes the credential of its check", () => {
    const wrong = apiOperations()
      .filter((op) => !UNCHECKED.has(op.operationId))
      .map((op) => ({ op: op.operationId, described: op.access, checked: checkOf(op.path)?.access ?? "none" }))
      .filter((row) => row.described !== row.checked);
    expect(wrong).toEqual([]);
  });

  it("the operations outside every checked path are exactly the known ones", () => {
    const outside = apiOperations()
      .filter((op) => checkOf(op.path) === undefined)
      .map((op) => [op.operationId, op.access]);
    expect(new Map(outside as [string, Access][])).toEqual(UNCHECKED);
  });

  it("sees a path under a prefix, the prefix itself, and not a longer name beside it", () => {
    expect(checkOf("/v1/chat/completions")?.access).toBe("apiKey");
    expect(checkOf("/api/v1/admin")?.access).toBe("admin");
    expect(checkOf("/v1x/models")).toBeUndefined();
    expect(checkOf("/messages/extra")).toBeUndefined();
  });
});
