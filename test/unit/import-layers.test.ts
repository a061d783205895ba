import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ESLint } from "eslint";
// @ts-expect-error: a plain ESM script without type declarations
import { findCycles } from "../../scripts/check-cycles.mjs";
import { describe, expect, it } from "vitest";

// The lint rule is the enforcement of DESIGN.md §3's import direction; these cases prove it bites.
const eslint = new ESLint({ cwd: process.cwd() });

async function violations(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

describe("import direction lint rule", () => {
  it.each([
    ["src/billing/tokens.ts", 'import { pool } from "../db/pool.js";\nexport const x = pool;\n'],
    ["src/errors.ts", 'import { x } from "./server/respond.js";\nexport const y = x;\n'],
    ["src/providers/openai/chat.ts", 'import { x } from "../../quota/ledger.js";\nexport const y = x;\n'],
    ["src/db/pool.ts", 'import { x } from "../inference/chat-route.js";\nexport const y = x;\n'],
    ["src/runtime/app.ts", 'import { x } from "../../cli/serve.js";\nexport const y = x;\n'],
    ["src/server/respond.ts", 'import { x } from "../auth/middleware.js";\nexport const y = x;\n'],
    ["src/server/health.ts", 'import { x } from "../quota/ledger.js";\nexport const y = x;\n'],
    ["src/auth/users.ts", 'import { x } from "../runtime/services.js";\nexport const y = x;\n'],
    // The order among the service folders (serviceOrder in eslint.config.js).
    ["src/auth/users.ts", 'import { x } from "../metering/meter.js";\nexport const y = x;\n'],
    ["src/catalog/catalog.ts", 'import { x } from "../auth/index.js";\nexport const y = x;\n'],
    ["src/metering/runner.ts", 'import { x } from "../inference/chat-route.js";\nexport const y = x;\n'],
    ["src/analytics/queries.ts", 'import { x } from "../account/quota-route.js";\nexport const y = x;\n'],
    // The metrics recorders sit below every layer that records, just above the pure modules.
    ["src/metrics/prometheus.ts", 'import { x } from "../quota/ledger.js";\nexport const y = x;\n'],
    ["src/metrics/labels.ts", 'import type { X } from "../server/context.js";\nexport type Y = X;\n'],
    ["src/config/schema.ts", 'import { x } from "../metrics/labels.js";\nexport const y = x;\n'],
  ])("rejects an upward import in %s", async (file, code) => {
    expect(await violations(file, code)).toHaveLength(1);
  });

  it.each([
    ["src/quota/schema.ts", 'import { users } from "../auth/schema.js";\nexport const y = users;\n'],
    ["src/metering/access.ts", 'import type { X } from "../auth/principals.js";\nexport type Y = X;\n'],
    ["src/inference/chat-route.ts", 'import { x } from "../metering/runner.js";\nexport const y = x;\n'],
    ["src/runtime/app.ts", 'import { x } from "../auth/middleware.js";\nexport const y = x;\n'],
    ["src/auth/middleware.ts", 'import { x } from "../server/respond.js";\nexport const y = x;\n'],
    ["src/server/health.ts", 'import { x } from "../db/pool.js";\nexport const y = x;\n'],
    ["src/runtime/services.ts", 'import { x } from "../auth/index.js";\nexport const y = x;\n'],
    ["cli/serve.ts", 'import { x } from "../src/runtime/gateway.js";\nexport const y = x;\n'],
    ["src/quota/escrow.ts", 'import type { X } from "../metrics/recorders.js";\nexport type Y = X;\n'],
    ["src/server/request-metrics.ts", 'import type { X } from "../metrics/recorders.js";\nexport type Y = X;\n'],
    ["src/metering/meter.ts", 'import type { X } from "../metrics/recorders.js";\nexport type Y = X;\n'],
    ["src/metrics/labels.ts", 'import type { Config } from "../config/schema.js";\nexport type Y = Config;\n'],
  ])("allows a downward import in %s", async (file, code) => {
    expect(await violations(file, code)).toEqual([]);
  });
});

describe("import cycle check (scripts/check-cycles.mjs)", () => {
  /** A source tree of `files` (path → content) in a temp dir; returns its cycles. */
  function cyclesOf(files: Record<string, string>) {
    const root = mkdtempSync(path.join(os.tmpdir(), "cycles-"));
    try {
      for (const [file, content] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
        writeFileSync(path.join(root, file), content);
      }
      return findCycles(root);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }

  it("finds a cycle between files, type-only imports included", () => {
    const found = cyclesOf({
      "x/a.ts": 'import type { B } from "./b.js";\nexport type A = B;\n',
      "x/b.ts": 'import { a } from "./a.js";\nexport const b = a;\n',
    });
    expect(found).toEqual({ files: [[path.join("x", "a.ts"), path.join("x", "b.ts")]], folders: [] });
  });

  it("finds a cycle between folders that no two files close", () => {
    const found = cyclesOf({
      "x/a.ts": 'import { b } from "../y/b.js";\nexport const a = b;\n',
      "y/b.ts": "export const b = 1;\n",
      "y/c.ts": 'export { d } from "../x/d.js";\n',
      "x/d.ts": "export const d = 1;\n",
    });
    expect(found).toEqual({ files: [], folders: [["x", "y"]] });
  });

  it("accepts imports that run one way", () => {
    const found = cyclesOf({
      "x/a.ts": 'import { b } from "../y/b.js";\nimport { c } from "./c.js";\nexport const a = b + c;\n',
      "x/c.ts": 'import { b } from "../y/b.js";\nexport const c = b;\n',
      "y/b.ts": 'import { e } from "../e.js";\nexport const b = e;\n',
      "e.ts": "export const e = 1;\n",
    });
    expect(found).toEqual({ files: [], folders: [] });
  });

  it("finds none in src/", () => {
    expect(findCycles(path.resolve("src"))).toEqual({ files: [], folders: [] });
  });
});
