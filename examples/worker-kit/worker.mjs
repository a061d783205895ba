import { createRunner, createWorkerClient, defineTask, stopOnSignals } from "@model-gateway/worker-kit";

// The same worker in plain JavaScript: no compiler, `node worker.mjs` runs it as it is.
const answer = defineTask("answer", async (job, { addUsage }) => {
  addUsage({ model_calls: 0, cost_usd: "0" });
  return { content: `Plain JavaScript answered case ${job.case_id}.`, card: null, evidence: [], disposition: "answer" };
});

const runner = createRunner({ client: createWorkerClient(), tasks: [answer], workerId: "my-js-worker" });
runner.start();
await stopOnSignals(runner);
