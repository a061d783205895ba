import { readFileSync } from "node:fs";
import path from "node:path";
import { execa, type ResultPromise } from "execa";
import { afterAll, describe, expect, it } from "vitest";
import { cleanEnv, gatewayBin, endWork, startServe, tempDir, type ServeProcess } from "../helpers/cli.js";

// docs/support.md opens with a walk a newcomer copies into a shell: the demo, its reference worker, and the block
// of curl commands. This runs that block as written (bash, from the directory `npm start` ran in), so the doc
// cannot drift from what the gateway answers.
const doc = readFileSync(path.resolve("docs/support.md"), "utf8");
const walk = /## Try it on the demo\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(doc)?.[1];

describe("docs/support.md, Try it on the demo", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let serve: ServeProcess | undefined;
  let worker: ResultPromise | undefined;

  afterAll(() => endWork(work, worker, serve?.proc));

  it("takes a failed request to a case the worker answers", async () => {
    expect(walk, "the walk's sh block").toBeDefined();
    work = await tempDir("gateway-e2e-walk-");
    // As `npm start` and `npx gateway worker run --demo` run them: the default data dir, ./.gateway.
    serve = startServe(["--demo", "--port", "0"], { cwd: work.dir });
    await serve.waitFor(/ready at (http:\/\/\S+)/);
    worker = execa(gatewayBin, ["worker", "run", "--demo"], { cwd: work.dir, env: cleanEnv(), extendEnv: true, reject: false });

    const run = await execa("bash", ["-euo", "pipefail", "-c", walk!], { cwd: work.dir, reject: false, timeout: 120_000 });
    expect(run.exitCode, run.stderr).toBe(0);
    const lines = run.stdout.split("\n");
    const requestId = /^failed request: (req_\w+)$/.exec(lines[0] ?? "")?.[1];
    expect(requestId, run.stdout).toBeDefined();
    // Step 3: the user's own log names it, with the gateway's code for a provider that is down, and no charge.
    expect(lines[1]).toBe(`${requestId} 502 upstream_unreachable charged 0`);
    expect(lines[2]).toMatch(/^case: [0-9a-f-]{36}$/);
    expect(lines[3]).toMatch(/^answer: \S/);
  }, 180_000);
});
