import http from "node:http";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, gateway, gatewayBin, tempDir } from "../helpers/cli.js";
import { closedPort } from "../helpers/poll.js";

// `gateway worker run` as an operator meets it before any job arrives: its help shows the defaults, and a worker
// started with no gateway at its URL says so once, naming the URL and what to check, then says when it is back.
// The full walk with a live gateway is worker-reference.test.ts.

let work: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  work = await tempDir("gateway-e2e-worker-run-");
});
afterAll(() => work?.remove());

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("gateway worker run", () => {
  it("--help shows the defaults and what Ctrl-C does", { timeout: 60_000 }, async () => {
    const { exitCode, stdout } = await gateway(["worker", "run", "--help"], { cwd: work.dir });
    expect(exitCode).toBe(0);
    expect(stdout).toMatch(/--concurrency <n>\s+jobs worked at once \(default: 2\)/);
    expect(stdout).toMatch(/--lease-seconds <n>\s+lease asked per job \(30\.\.300\) \(default: 120\)/);
    expect(stdout).toMatch(/--log-format <format>.*\(choices: "pretty", "json"\)/s);
    expect(stdout).toContain("Ctrl-C again gives them back to the queue at once");
  });

  it("names an unreachable gateway once, with its URL and the hint, and says when it is back", { timeout: 120_000 }, async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}`;
    const worker = execa(gatewayBin, ["worker", "run", "--model", "m", "--url", url], {
      cwd: work.dir,
      env: cleanEnv({ SUPPORT_BOT_TOKEN: "bot-token", GATEWAY_API_KEY: "gw_key", GATEWAY_LOG_LEVEL: "debug" }),
      extendEnv: true,
      reject: false,
      timeout: 100_000,
      buffer: { stdout: false, stderr: false },
    });
    let out = "";
    worker.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const lines = () =>
      out
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown> & { msg: string });
    // The gateway's stand-in: nothing at first, then a claim endpoint that has no job.
    const stand = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jobs: [] }));
    });
    try {
      // Not a line per backoff: after three more failed claims (told at debug), still one warning.
      await until("three more failed claims", () => lines().filter((l) => l.msg === "claim failed; backing off").length >= 3);
      const warned = lines().filter((l) => l.level === 40);
      expect(warned).toHaveLength(1);
      expect(warned[0]!.msg).toBe("gateway unreachable; retrying until it answers");
      expect(warned[0]!.err).toBe(
        `cannot reach the gateway at ${url} (ECONNREFUSED): is \`gateway serve\` running there? set --url or GATEWAY_URL`,
      );

      await new Promise<void>((resolve) => stand.listen(port, "127.0.0.1", resolve));
      await until("the back line", () => lines().some((l) => l.msg === "gateway is back; claiming again"));
      worker.kill("SIGINT");
      const result = await worker;
      expect(result.exitCode).toBe(0);
      expect(lines().at(-1)).toMatchObject({ msg: "worker stopped" });
    } finally {
      worker.kill("SIGKILL");
      await worker.catch(() => {});
      stand.closeAllConnections();
      await new Promise<void>((resolve) => stand.close(() => resolve()));
    }
  });
});
