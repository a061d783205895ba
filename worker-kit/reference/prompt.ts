import type { Card, ClaimedJob, RequestFacts } from "../wire/support.js";
import type { JobKind } from "../runner/task.js";

// The chat messages the reference worker sends for a job: one system message that says who speaks, to whom, in
// which language and from which facts, then the conversation. Pure. The facts and the card are given as JSON
// so the model quotes the gateway's own words rather than guessing them.

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/** What the model answers, alone, when it cannot help: the answer task turns it into `needs_staff`. */
export const NEEDS_STAFF_MARKER = "NEEDS_STAFF";

export interface PromptInput {
  kind: JobKind;
  context: ClaimedJob["context"];
}

const AUDIENCE: Record<JobKind, string> = {
  answer:
    "You are the support assistant of a model gateway (an HTTP API in front of model providers). Answer the user " +
    "directly: say what went wrong with their request, why, and what they can do now.",
  staff_draft:
    "You draft a reply for a support engineer of a model gateway, who will review it before the user sees it. " +
    "Write the reply to the user.",
  operator_draft:
    "You draft a note for the gateway's operator about the failure this case shows: what failed, since when, what " +
    "the operator should check (upstream provider, configuration, quotas). It is private: no user will read it.",
  bug_draft:
    "You draft a bug report about the gateway from this case: title, what happened, what was expected, the " +
    "request's facts, and how to reproduce it. It is private: no user will read it.",
};

function systemMessage({ kind, context }: PromptInput): string {
  const lines = [
    AUDIENCE[kind],
    `Write in the language of the locale "${context.locale}".`,
    "Use only the facts below; never invent error codes, limits or prices. Keep it short.",
  ];
  if (kind === "answer") {
    lines.push(
      `If the facts and the conversation do not let you help (the user asks for a refund, an account change, a ` +
        `human, or something the facts do not explain), answer exactly ${NEEDS_STAFF_MARKER} and nothing else.`,
    );
  }
  lines.push("", "Request facts (from the gateway's request log):", factsText(context.facts));
  if (context.card) lines.push("", "The case's current card:", JSON.stringify(cardSummary(context.card)));
  if (context.history_truncated) lines.push("", "Older messages of the conversation are left out.");
  return lines.join("\n");
}

function factsText(facts: RequestFacts | null): string {
  return facts ? JSON.stringify(facts) : "none: the case cites no request the gateway found.";
}

function cardSummary(card: Card) {
  return { problem: card.problem, hypotheses: card.hypotheses, next_step: card.next_step };
}

/** The transcript as chat turns: staff replies are the assistant's side of the conversation too. */
function conversation(context: PromptInput["context"]): ChatMessage[] {
  return context.transcript.map((message) => ({
    role: message.role === "user" ? "user" : "assistant",
    content: message.role === "staff" ? `[support engineer] ${message.content}` : message.content,
  }));
}

function transcriptText(context: PromptInput["context"]): string {
  if (context.transcript.length === 0) return "(no messages)";
  return context.transcript.map((message) => `${message.role}: ${message.content}`).join("\n");
}

export function buildPrompt(input: PromptInput): ChatMessage[] {
  const system: ChatMessage = { role: "system", content: systemMessage(input) };
  if (input.kind !== "answer") {
    // A draft is written about the conversation, not as its next turn.
    return [system, { role: "user", content: `The conversation so far:\n${transcriptText(input.context)}\n\nWrite the draft now.` }];
  }
  const turns = conversation(input.context);
  if (turns.at(-1)?.role !== "user") {
    // A case opened without a question (or whose last word was ours) still wants a diagnosis.
    turns.push({ role: "user", content: "What went wrong with this request, and what should I do?" });
  }
  return [system, ...turns];
}
