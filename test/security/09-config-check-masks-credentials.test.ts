import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gateway, tempDir } from "../helpers/cli.js";

// Issue 20, item 9: `gateway config check` prints the resolved config; a credential inside a URL (userinfo in a
// provider's base_url, a password in the database URL's query) is masked like a credential field, in the text
// output and in --json alike.

const SECRETS = ["upstream-user-8c1", "upstream-pass-8c1", "db-pass-8c1", "db-query-pass-8c1", "ssl-pass-8c1", "db-token-8c1"];

describe("gateway config check masks credentials inside URLs", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let file: string;

  beforeAll(async () => {
    work = await tempDir("gateway-security-09-");
    file = path.join(work.dir, "gateway.yaml");
    writeFileSync(
      file,
      [
        "database:",
        "  url: 'postgres://gw:db-pass-8c1@db.internal:5432/gw?password=db-query-pass-8c1&sslpassword=ssl-pass-8c1&token=db-token-8c1&sslmode=require'",
        "providers:",
        "  main: { protocol: openai, base_url: 'https://upstream-user-8c1:upstream-pass-8c1@api.example.com/v1', api_key: sk-key-8c1 }",
        "models:",
        "  m: { kind: chat, upstream: m, targets: [main] }",
        "",
      ].join("\n"),
    );
  });
  afterAll(() => work?.remove());

  it.each([
    ["text", [] as string[]],
    ["--json", ["--json"]],
  ])("in the %s output", async (_name, extra) => {
    const checked = await gateway(["config", "check", "--config", file, ...extra], { cwd: work.dir });
    expect(checked.exitCode).toBe(0);
    for (const secret of [...SECRETS, "sk-key-8c1"]) expect(checked.stdout).not.toContain(secret);
    expect(checked.stderr).not.toMatch(/8c1/);
    // What is not a credential still shows, so the operator can check the addresses.
    expect(checked.stdout).toContain("api.example.com/v1");
    expect(checked.stdout).toContain("db.internal:5432/gw");
    expect(checked.stdout).toContain("sslmode=require");
  });
});
