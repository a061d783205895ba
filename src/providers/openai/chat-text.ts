// The completion text of a chat answer as the gateway counts it when the upstream reports no usage: content,
// refusals, and tool-call names and arguments. One rule for JSON messages and stream deltas, so the same
// answer costs the same either way.

function collect(message: unknown, into: string[]) {
  if (message === null || typeof message !== "object") return;
  const m = message as Record<string, unknown>;
  if (typeof m.content === "string") into.push(m.content);
  if (typeof m.refusal === "string") into.push(m.refusal);
  if (!Array.isArray(m.tool_calls)) return;
  for (const call of m.tool_calls) {
    const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
    if (typeof fn?.name === "string") into.push(fn.name);
    if (typeof fn?.arguments === "string") into.push(fn.arguments);
  }
}

/** Appends the text of every choice's `message` (JSON) or `delta` (stream chunk) to `into`. */
export function collectChoicesText(choices: unknown, field: "message" | "delta", into: string[]): void {
  if (!Array.isArray(choices)) return;
  for (const choice of choices) {
    if (choice !== null && typeof choice === "object") collect((choice as Record<string, unknown>)[field], into);
  }
}

/** The completion text of a JSON answer, for the local count when the upstream reports no usage. */
export function chatCompletionText(answer: Record<string, unknown>): string {
  const parts: string[] = [];
  collectChoicesText(answer.choices, "message", parts);
  return parts.join("");
}
