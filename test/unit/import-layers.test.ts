import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ESLint } from "eslint";
// @ts-expect-error: a plain ESM script without type declarations
import { findCycles } from "../../scripts/check-cycles.mjs";
import { describe, expect, it } from "vitest";

// The lint rule is the enforcement of the import direction of docs/architecture.md, "Rules"; these cases prove it bites.
const eslint = new ESLint({ cwd: process.cwd() });

async function violations(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  const rules = ["no-restricted-imports", "model-gateway/package-boundary"];
  return result!.messages.filter((m) => rules.includes(m.ruleId ?? "")).map((m) => m.message);
}

describe("import direction lint rule", () => {
  it.each([
    ["src/billing/tokens.ts", 'import { pool } from "../db/pool.js";\nexport const x = pool;\n'],
    ["src/errors.ts", 'import { x } from "./server/respond.js";\nexport const y = x;\n'],
    ["src/providers/openai/chat.ts", 'import { x } from "../../quota/ledger.js";\nexport const y = x;\n'],
    ["src/db/pool.ts", 'import { x } from "../inference/chat-routes.js";\nexport const y = x;\n'],
    ["src/runtime/app.ts", 'import { x } from "../../cli/serve.js";\nexport const y = x;\n'],
    ["src/server/respond.ts", 'import { x } from "../auth/middleware.js";\nexport const y = x;\n'],
    ["src/server/health-routes.ts", 'import { x } from "../quota/ledger.js";\nexport const y = x;\n'],
    ["src/auth/users.ts", 'import { x } from "../runtime/services.js";\nexport const y = x;\n'],
    // The order among the service folders (serviceOrder in eslint.config.js).
    ["src/auth/users.ts", 'import { x } from "../metering/meter.js";\nexport const y = x;\n'],
    ["src/catalog/catalog.ts", 'import { x } from "../auth/index.js";\nexport const y = x;\n'],
    ["src/metering/metered-handler.ts", 'import { x } from "../inference/chat-routes.js";\nexport const y = x;\n'],
    ["src/analytics/queries.ts", 'import { x } from "../balances/quota-routes.js";\nexport const y = x;\n'],
    // The metrics recorders sit below every layer that records, just above the pure modules.
    ["src/metrics/prometheus.ts", 'import { x } from "../quota/ledger.js";\nexport const y = x;\n'],
    ["src/metrics/labels.ts", 'import type { X } from "../server/context.js";\nexport type Y = X;\n'],
    ["src/config/schema.ts", 'import { x } from "../metrics/labels.js";\nexport const y = x;\n'],
    // worker-kit is a package: no relative import leaves its folder, and it imports only its own dependencies.
    ["worker-kit/client/x.ts", 'import { x } from "../../src/db/pool.js";\nexport const y = x;\n'],
    ["worker-kit/tui/x.tsx", 'import { x } from "../../src/support/cases/cases.js";\nexport const y = x;\n'],
    ["worker-kit/runner/x.ts", 'import type { X } from "../../src/transfers/wire.js";\nexport type Y = X;\n'],
    ["worker-kit/runner/x.ts", 'import { x } from "../../cli/output.js";\nexport const y = x;\n'],
    ["worker-kit/index.ts", 'export { x } from "../src/errors.js";\n'],
    ["worker-kit/tui/state/x.ts", 'export const y = () => import("../../../src/errors.js");\n'],
    ["worker-kit/client/x.ts", 'import { x } from "hono";\nexport const y = x;\n'],
    // A wire module imports only zod and other wire modules.
    ["worker-kit/wire/support.ts", 'import { x } from "../runner/task.js";\nexport const y = x;\n'],
    ["worker-kit/wire/staff.ts", 'import { x } from "pg";\nexport const y = x;\n'],
    ["worker-kit/wire/auth.ts", 'import type { X } from "../errors.js";\nexport type Y = X;\n'],
    ["src/transfers/wire.ts", 'import { x } from "./transfers.js";\nexport const y = x;\n'],
    ["src/transfers/wire.ts", 'import { x } from "@model-gateway/worker-kit";\nexport const y = x;\n'],
    // The gateway reaches worker-kit through the package: src/ its wire modules only, cli/ its exports only.
    ["src/support/cases/cases.ts", 'import { x } from "@model-gateway/worker-kit";\nexport const y = x;\n'],
    ["src/support/cases/cases.ts", 'import { x } from "@model-gateway/worker-kit/reference";\nexport const y = x;\n'],
    ["src/support/cases/cases.ts", 'import { x } from "../../../worker-kit/wire/support.js";\nexport const y = x;\n'],
    ["cli/support.ts", 'import { x } from "../worker-kit/client/errors.js";\nexport const y = x;\n'],
    ["cli/support.ts", 'import { x } from "@model-gateway/worker-kit/tui/state/text.js";\nexport const y = x;\n'],
    // worker-kit's core has no UI: the --json twins load it without Ink.
    ["worker-kit/runner/runner.ts", 'import { render } from "ink";\nexport const y = render;\n'],
    ["worker-kit/tui/state/text.ts", 'import { useState } from "react";\nexport const y = useState;\n'],
    ["worker-kit/tui/state/manual-job.ts", 'import { JobView } from "../job-view.js";\nexport const y = JobView;\n'],
    ["worker-kit/runner/runner.ts", 'import { App } from "../tui/app.js";\nexport const y = App;\n'],
    // Above the ledger, its statements and its lock order are reached through src/quota/in-transaction.ts only.
    ["src/transfers/transfers-sql.ts", 'import { x } from "../quota/durable-sql.js";\nexport const y = x;\n'],
    ["src/transfers/transfers-sql.ts", 'import { x } from "../quota/account-locks.js";\nexport const y = x;\n'],
    ["src/balances/reserve-resets.ts", 'import type { X } from "../quota/resets-sql.js";\nexport type Y = X;\n'],
    ["src/media/video-end.ts", 'import { x } from "../quota/restore-sql.js";\nexport const y = x;\n'],
    ["src/runtime/services.ts", 'import { x } from "../quota/lease-direct-sql.js";\nexport const y = x;\n'],
    ["src/mock-upstream/server.ts", 'import { x } from "../quota/account-sql.js";\nexport const y = x;\n'],
    ["cli/ledger.ts", 'import { x } from "../src/quota/reconcile-sql.js";\nexport const y = x;\n'],
  ])("rejects an upward import in %s", async (file, code) => {
    expect(await violations(file, code)).toHaveLength(1);
  });

  it.each([
    ["src/quota/schema.ts", 'import { users } from "../auth/schema.js";\nexport const y = users;\n'],
    ["src/metering/access.ts", 'import type { X } from "../auth/principals.js";\nexport type Y = X;\n'],
    ["src/inference/chat-routes.ts", 'import { x } from "../metering/runner.js";\nexport const y = x;\n'],
    ["src/runtime/app.ts", 'import { x } from "../auth/middleware.js";\nexport const y = x;\n'],
    ["src/auth/middleware.ts", 'import { x } from "../server/respond.js";\nexport const y = x;\n'],
    ["src/server/health-routes.ts", 'import { x } from "../db/pool.js";\nexport const y = x;\n'],
    ["src/runtime/services.ts", 'import { x } from "../auth/index.js";\nexport const y = x;\n'],
    ["cli/serve.ts", 'import { x } from "../src/runtime/gateway.js";\nexport const y = x;\n'],
    ["src/quota/escrow.ts", 'import type { X } from "../metrics/recorders.js";\nexport type Y = X;\n'],
    ["src/server/request-metrics.ts", 'import type { X } from "../metrics/recorders.js";\nexport type Y = X;\n'],
    ["src/metering/meter.ts", 'import type { X } from "../metrics/recorders.js";\nexport type Y = X;\n'],
    ["src/metrics/labels.ts", 'import type { Config } from "../config/schema.js";\nexport type Y = Config;\n'],
    ["worker-kit/client/x.ts", 'import { x } from "../wire/support.js";\nexport const y = x;\n'],
    ["worker-kit/client/x.ts", 'import { x } from "pino";\nimport os from "node:os";\nexport const y = [x, os];\n'],
    ["worker-kit/tui/x.tsx", 'import type { X } from "../wire/staff.js";\nexport type Y = X;\n'],
    ["worker-kit/tui/state/x.ts", 'import type { X } from "../../wire/staff.js";\nexport type Y = X;\n'],
    ["worker-kit/wire/staff.ts", 'import { x } from "./user-cases.js";\nimport { z } from "zod";\nexport const y = [x, z];\n'],
    ["src/transfers/wire.ts", 'import { x } from "@model-gateway/worker-kit/wire/text";\nexport const y = x;\n'],
    ["src/support/cases/cases.ts", 'import { x } from "@model-gateway/worker-kit/wire/support";\nexport const y = x;\n'],
    ["cli/support.ts", 'import { x } from "@model-gateway/worker-kit";\nexport const y = x;\n'],
    ["cli/support.ts", 'import { x } from "@model-gateway/worker-kit/tui";\nexport const y = x;\n'],
    ["cli/worker.ts", 'import { x } from "@model-gateway/worker-kit/reference";\nexport const y = x;\n'],
    ["worker-kit/tui/job-screen.tsx", 'import { Text } from "ink";\nexport const y = Text;\n'],
    ["worker-kit/tui/state/manual-job.ts", 'import { x } from "./text.js";\nexport const y = x;\n'],
    ["src/transfers/transfers-sql.ts", 'import { x } from "../quota/in-transaction.js";\nexport const y = x;\n'],
    ["src/quota/in-transaction.ts", 'import { x } from "./account-locks.js";\nexport const y = x;\n'],
    ["src/jobs/tasks.ts", 'import { x } from "../quota/index.js";\nexport const y = x;\n'],
  ])("allows a downward import in %s", async (file, code) => {
    expect(await violations(file, code)).toEqual([]);
  });
});

describe("what worker-kit's files reach", () => {
  const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g;

  /** Every file reached from worker-kit's sources (not its dist/) by relative imports, followed transitively. */
  function reachedFromWorkerKit(): string[] {
    const root = path.resolve("worker-kit");
    const start = readdirSync(root, { recursive: true, encoding: "utf8" })
      .filter((f) => /\.tsx?$/.test(f) && !/^(dist|node_modules)\//.test(f))
      .map((f) => path.join(root, f));
    const seen = new Set<string>();
    const queue = [...start];
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const match of readFileSync(file, "utf8").matchAll(IMPORT)) {
        const target = path.resolve(path.dirname(file), (match[1] ?? match[2])!);
        const source = [target.replace(/\.js$/, ".ts"), target.replace(/\.js$/, ".tsx")].find((f) => existsSync(f));
        queue.push(source ?? target);
      }
    }
    return [...seen].map((f) => path.relative(process.cwd(), f));
  }

  it("is worker-kit's own files and nothing else: the package stands alone", () => {
    const reached = reachedFromWorkerKit();
    expect(reached.filter((f) => f.startsWith(`worker-kit${path.sep}wire${path.sep}`)).length).toBeGreaterThan(0);
    expect(reached.filter((f) => !f.startsWith(`worker-kit${path.sep}`))).toEqual([]);
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

  it("finds a cycle inside a folder, between a subfolder and a file beside it", () => {
    const found = cyclesOf({
      "x/deliver.ts": 'import { relay } from "./relays/relay.js";\nexport const deliver = relay;\n',
      "x/relays/relay.ts": 'export const relay = 1;\nexport { usage } from "./usage.js";\n',
      "x/relays/usage.ts": 'import { deliver } from "../deliver.js";\nexport const usage = deliver;\n',
    });
    expect(found.folders).toEqual([["x/deliver", "x/relays"]]);
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
