import { once } from "node:events";
import { createRunner, createWorkerClient, defineTask, stopOnSignals } from "../../worker-kit/index.js";

// A worker process for the signal tests (test/integration/worker-kit-runner.test.ts): one slot; its task says
// "started" on stdout, then holds its job until a line arrives on stdin, so the test can signal it mid-job; the
// process says when a signal reached it, so the test lets the job go (or signals again) only after that.

const client = createWorkerClient({ baseUrl: process.env.GATEWAY_URL!, botToken: process.env.SUPPORT_BOT_TOKEN! });
const task = defineTask("answer", async (job) => {
  process.stdout.write(`started ${job.id}\n`);
  await once(process.stdin, "data");
  return { content: "Answered after the signal.", card: null, evidence: [], disposition: "answer" };
});
const runner = createRunner({ client, tasks: [task], workerId: "signal-worker", concurrency: 1, pollIntervalMs: 100 });
runner.start();
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => process.stdout.write(`${signal} received\n`));
await stopOnSignals(runner);
process.exit(0);
