import { copyFile, readFile } from "node:fs/promises";
import path from "node:path";
import { execa, type ResultPromise } from "execa";
import { afterAll, describe, expect, it } from "vitest";
import { readDemoCredentials } from "../../src/runtime/demo.js";
import { staffCaseDetailSchema } from "../../worker-kit/wire/staff.js";
import { cleanEnv, endWork, startServe, tempDir, type ServeProcess } from "../helpers/cli.js";
import { logIn, type Session } from "../helpers/login.js";
import { openCaseOnFailedRequest } from "../helpers/demo-case.js";
import { until } from "../helpers/poll.js";

// Issue 32: worker-kit proved from outside, as a newcomer uses it (docs/worker-kit.md, "Package", runs these very
// steps). The package is packed, installed from the tarball into a fresh project that has only Node and TypeScript
// and a `tsc --init` config left as it is, and a worker compiled there with tsc (examples/worker-kit/worker.ts) runs
// with plain `node` against a live `gateway serve --demo` until the case it answers shows the answer; then the
// same in plain JavaScript (examples/worker-kit/worker.mjs), with no compiler at all.

// The registry is reachable but the cache is preferred: the packages are the repository's own, already installed.
const NPM_FLAGS = ["--prefer-offline", "--no-audit", "--no-fund"];
const EXAMPLES = path.resolve("examples/worker-kit");

describe("the worker-kit package, from outside", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let serve: ServeProcess | undefined;
  let worker: ResultPromise | undefined;

  afterAll(() => endWork(work, worker, serve?.proc));

  /** Opens a user's case about a failed request: the gateway queues an `answer` job for it. */
  async function openCase(url: string, key: string, user: Session): Promise<string> {
    return (await openCaseOnFailedRequest(url, key, user.headers, { locale: "en", question: "Why did my request fail?" })).id;
  }

  /** Runs `node <script>` in the project until the case shows an assistant answer; returns the staff detail. */
  async function answeredBy<T>(
    script: string,
    project: string,
    env: Record<string, string>,
    check: () => Promise<T | undefined>,
  ): Promise<T> {
    let err = "";
    worker = execa("node", [script], { cwd: project, env: cleanEnv(env), extendEnv: true, reject: false, buffer: false });
    worker.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
    worker.stdout!.on("data", (chunk: Buffer) => (err += chunk.toString()));
    const detail = await until(
      `${script} to answer`,
      async () => {
        if (worker!.exitCode !== null) throw new Error(`${script} exited (${worker!.exitCode}): ${err}`);
        return check();
      },
      900,
    );
    worker.kill("SIGTERM");
    const result = await worker;
    expect(result.exitCode, err).toBe(0);
    return detail;
  }

  it("packs, installs into a fresh TypeScript project, compiles a worker there and publishes a job; plain JS too", async () => {
    work = await tempDir("gateway-e2e-worker-kit-");
    const project = path.join(work.dir, "my-worker");

    // 1. The tarball: `npm pack` builds the package first (its prepack script).
    const packed = await execa("npm", ["pack", "--pack-destination", work.dir, "--json"], { cwd: "worker-kit" });
    const [{ filename, files }] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }];
    expect(files.map((f) => f.path)).toEqual(expect.arrayContaining(["package.json", "README.md", "dist/index.js", "dist/index.d.ts"]));
    expect(files.filter((f) => !/^(dist\/.*\.(js|d\.ts)|package\.json|README\.md)$/.test(f.path))).toEqual([]);

    // 2. A fresh project with only Node and TypeScript, and tsc's own default config.
    await execa("mkdir", [project]);
    await execa("npm", ["init", "-y"], { cwd: project });
    await execa("npm", ["pkg", "set", "type=module"], { cwd: project });
    await execa("npm", ["install", ...NPM_FLAGS, `../${filename}`, "typescript@5.9"], { cwd: project });
    await execa("npx", ["tsc", "--init"], { cwd: project });
    const tsconfig = await readFile(path.join(project, "tsconfig.json"), "utf8");
    expect(tsconfig).toMatch(/"types": \[\]/); // no Node types: the worker's code cannot read process.env itself

    // 3. The worker, compiled by tsc with that config.
    await copyFile(path.join(EXAMPLES, "worker.ts"), path.join(project, "worker.ts"));
    await copyFile(path.join(EXAMPLES, "worker.mjs"), path.join(project, "worker.mjs"));
    const compiled = await execa("npx", ["tsc"], { cwd: project, reject: false });
    expect(compiled.exitCode, compiled.stdout).toBe(0);

    // 4. A live gateway with a job waiting.
    serve = startServe(["--demo", "--port", "0", "--data-dir", path.join(work.dir, "data")], { cwd: work.dir });
    const [, url] = await serve.waitFor(/ready at (http:\/\/\S+)/);
    const saved = (await readDemoCredentials(path.join(work.dir, "data")))!;
    const user = await logIn(url!, saved.email, saved.password!);
    const env = { GATEWAY_URL: url!, SUPPORT_BOT_TOKEN: saved.bot_token! };
    const staffDetail = async (id: string) =>
      staffCaseDetailSchema.parse(await (await fetch(`${url}/api/v1/assistant/cases/${id}`, { headers: user.headers })).json());
    const answered = (id: string) => async () => {
      const d = await staffDetail(id);
      return d.messages.some((m) => m.role === "assistant") ? d : undefined;
    };

    // 5. The compiled worker answers the case; the job is completed and the answer published to the user.
    const first = await openCase(url!, saved.key, user);
    const byTs = await answeredBy("worker.js", project, env, answered(first));
    expect(byTs.jobs.map((j) => [j.kind, j.status])).toEqual([["answer", "completed"]]);
    expect(byTs.messages.find((m) => m.role === "assistant")!.content).toBe(`Thanks: case ${first} is with us, and we answer in en.`);

    // 6. The plain JavaScript worker does the same.
    const second = await openCase(url!, saved.key, user);
    const byJs = await answeredBy("worker.mjs", project, env, answered(second));
    expect(byJs.jobs.map((j) => [j.kind, j.status])).toEqual([["answer", "completed"]]);
    expect(byJs.messages.find((m) => m.role === "assistant")!.content).toBe(`Plain JavaScript answered case ${second}.`);

    serve.proc.kill("SIGTERM");
    expect((await serve.proc).exitCode).toBe(0);
  }, 300_000);
});
