import { Hono } from "hono";
import { messageEvents, messageObject, type Plan, usageOf } from "./anthropic-messages-output.js";
import { type MessagesRequest, messagesRequest } from "./anthropic-messages-request.js";
import type { MockUpstreamEnv } from "./context.js";
import { anthropic, parseBody } from "./dialects.js";
import { chosenFunction, digestOf, promptTokens, replyOf, TOOL_ARGUMENTS, type ToolChoice, textOf, toolCallTokens } from "./mock-text.js";
import { playEvents } from "./sse.js";

/**
 * Anthropic `POST /v1/messages` (the SDK appends `/v1/messages` to its base URL), deterministic like the
 * OpenAI routes: everything derives from sha256 of the model, system prompt and messages
 * (docs/mock-upstream.md). The request's schema is in ./anthropic-messages-request.ts, the answer's shapes, JSON
 * and SSE, in ./anthropic-messages-output.ts.
 */

function toolChoiceOf(choice: MessagesRequest["tool_choice"]): ToolChoice {
  if (choice?.type === "tool" && choice.name) return { name: choice.name };
  return choice?.type === "any" ? "required" : choice?.type === "none" ? "none" : "auto";
}

function plan(req: MessagesRequest): Plan {
  const digest = digestOf([req.model, req.system ?? null, req.messages]);
  const hex = digest.toString("hex");
  const contents = req.messages.map((m) => m.content);
  const input = promptTokens(req.system === undefined ? contents : [req.system, ...contents]);
  const id = `msg_${hex.slice(0, 24)}`;

  const functions = (req.tools ?? []).flatMap((t) => (t.type === undefined || t.type === "custom" ? [t.name] : []));
  const last = req.messages.at(-1);
  const name = chosenFunction(functions, toolChoiceOf(req.tool_choice), last?.role === "user" ? textOf(last.content) : undefined);
  if (name !== undefined) {
    // Tool use is never cut by max_tokens.
    const toolUse = { id: `toolu_${hex.slice(24, 48)}`, name, input: TOOL_ARGUMENTS };
    const output = toolCallTokens(name, JSON.stringify(TOOL_ARGUMENTS));
    return { id, toolUse, pieces: [], stopReason: "tool_use", usage: usageOf(input, output) };
  }
  const reply = replyOf(digest, req.max_tokens);
  return { id, pieces: reply.pieces, stopReason: reply.truncated ? "max_tokens" : "end_turn", usage: usageOf(input, reply.words) };
}

export const anthropicMessagesRoute = new Hono<MockUpstreamEnv>().post("/v1/messages", async (c) => {
  // The real API requires `anthropic-version` (the SDK always sends it); the mock accepts any or none.
  const req = await parseBody(c, anthropic, messagesRequest);
  if (req instanceof Response) return req;
  const { omitUsage } = c.get("faults");
  const p = plan(req);
  return req.stream ? playEvents(c, messageEvents(req, p, omitUsage)) : c.json(messageObject(req, p, omitUsage));
});
