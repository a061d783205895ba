import { ESLint } from "eslint";
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
  ])("rejects an upward import in %s", async (file, code) => {
    expect(await violations(file, code)).toHaveLength(1);
  });

  it.each([
    ["src/db/schema.ts", 'export * from "../auth/schema.js";\n'],
    ["src/runtime/app.ts", 'import { x } from "../auth/middleware.js";\nexport const y = x;\n'],
    ["src/auth/middleware.ts", 'import { x } from "../server/respond.js";\nexport const y = x;\n'],
    ["src/server/health.ts", 'import { x } from "../db/pool.js";\nexport const y = x;\n'],
    ["src/runtime/services.ts", 'import { x } from "../auth/index.js";\nexport const y = x;\n'],
    ["cli/serve.ts", 'import { x } from "../src/runtime/gateway.js";\nexport const y = x;\n'],
  ])("allows a downward import in %s", async (file, code) => {
    expect(await violations(file, code)).toEqual([]);
  });
});
