import { createRunner, createWorkerClient, defineTask, stopOnSignals } from "@model-gateway/worker-kit";

// Answers every user question with the same short text; the gateway publishes it to the case.
const answer = defineTask("answer", async (job, { addUsage, logger }) => {
  logger.info({ locale: job.context.locale }, "answering"); // the job, kind, case and attempt are on every line already
  addUsage({ model_calls: 0, cost_usd: "0" }); // no model was called: the answer cost nothing
  return {
    content: `Thanks: case ${job.case_id} is with us, and we answer in ${job.context.locale}.`,
    card: null,
    evidence: [],
    disposition: "answer",
  };
});

// The gateway's url and bot token come from GATEWAY_URL and SUPPORT_BOT_TOKEN.
const runner = createRunner({ client: createWorkerClient(), tasks: [answer], workerId: "my-worker" });
runner.start();
await stopOnSignals(runner); // Ctrl-C or SIGTERM: finish the jobs in hand, then stop
