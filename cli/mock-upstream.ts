import { Command } from "commander";
import { startMockUpstream } from "../src/mock-upstream/server.js";
import { action } from "./output.js";
import { parsePort } from "./options.js";

export function mockUpstreamCommand(): Command {
  return new Command("mock-upstream")
    .option("--host <host>", "listen address", "127.0.0.1")
    .option("--port <port>", "listen port", parsePort, 9090)
    .option("--api-key <key>", "require this bearer key")
    .action(
      action(async (opts: { host: string; port: number; apiKey?: string }) => {
        const mock = await startMockUpstream(opts);
        process.stderr.write(`mock upstream listening on ${mock.url} (OpenAI base URL ${mock.baseUrl})\n`);
        const stop = () => void mock.close().then(() => process.exit(0));
        process.on("SIGINT", stop);
        process.on("SIGTERM", stop);
      }),
    );
}
