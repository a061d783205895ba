import { SUPPORT_JOB_KINDS } from "../wire/support.js";
import {
  defineTask,
  type Disposition,
  type Job,
  type JobKind,
  type TaskDefinition,
  type TaskHelpers,
  type TaskResult,
} from "../runner/task.js";
import { buildCard } from "./card.js";
import { chatComplete, type ChatOptions } from "./chat.js";
import { buildPrompt, NEEDS_STAFF_MARKER } from "./prompt.js";

// The reference worker: one task per job kind, each one chat call through the gateway. The card and evidence
// come from the request facts (./card.ts), the words from the model. The worker does not know the gateway's
// price for its own calls, so each call's cost is reported as unknown (null), never as zero; the gateway's
// request log has the real charge of each call.

/**
 * An answer's disposition: the model says it cannot help by answering the marker alone (the prompt asks it to
 * when the user wants a refund, an account change or a human, or the facts explain nothing), or says nothing at
 * all; either way a person should look, so the case goes to staff (`needs_staff`). Otherwise it is an answer.
 */
export function answerDisposition(content: string): Disposition {
  const bare = content.replace(/[\s.!]+/g, "");
  return bare === "" || bare.toUpperCase() === NEEDS_STAFF_MARKER ? "needs_staff" : "answer";
}

async function work(chat: ChatOptions, job: Job, helpers: TaskHelpers): Promise<TaskResult> {
  const messages = buildPrompt({ kind: job.kind, context: job.context });
  const answer = await chatComplete(chat, messages, helpers.signal);
  helpers.addUsage({ model_calls: 1, input_tokens: answer.inputTokens, output_tokens: answer.outputTokens, cost_usd: null });
  if (job.kind !== "answer") {
    // Drafts are private notes for staff: the card and evidence belong to the answers users read.
    return { content: answer.content, card: null, evidence: [], disposition: answer.content ? "answer" : "no_answer" };
  }
  const { card, evidence } = buildCard(job.context.facts);
  const disposition = answerDisposition(answer.content);
  helpers.logger.debug({ disposition }, "answer drafted");
  return { content: disposition === "answer" ? answer.content : "", card, evidence, disposition };
}

/** A task for every job kind the gateway queues, all answering through `chat`. */
export function referenceTasks(chat: ChatOptions): TaskDefinition[] {
  return SUPPORT_JOB_KINDS.map((kind: JobKind) => defineTask(kind, (job, helpers) => work(chat, job, helpers)));
}
