// The `@model-gateway/worker-kit/reference` export: the reference worker (`gateway worker run`), one task per job
// kind making one chat call through the gateway, and its pure parts for a worker of one's own to reuse.

export { referenceTasks, answerDisposition } from "./tasks.js";
export { chatComplete, type ChatAnswer, type ChatOptions } from "./chat.js";
export { buildCard, REQUEST_EVIDENCE_ID, type CardAndEvidence } from "./card.js";
export { buildPrompt, NEEDS_STAFF_MARKER, type ChatMessage, type PromptInput } from "./prompt.js";
