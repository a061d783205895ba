import { Hono } from "hono";
import type { MockUpstreamEnv } from "./context.js";
import { openai, parseBody } from "./dialects.js";
import {
  argumentSlices,
  chosenFunction,
  digestOf,
  promptTokens,
  replyOf,
  TOOL_ARGUMENTS,
  type ToolChoice,
  textOf,
  toolCallTokens,
} from "./mock-text.js";
import { type Plan, responseEvents, responseObject, usageOf } from "./openai-responses-output.js";
import { type ResponsesRequest, responsesRequest } from "./openai-responses-request.js";
import { playEvents } from "./sse.js";

/**
 * OpenAI `POST /v1/responses` (the Responses API), deterministic like the chat route: everything derives from
 * sha256 of the model, instructions and input (docs/mock-upstream.md). The request's schema is in
 * ./openai-responses-request.ts, the answer's shapes, JSON and SSE, in ./openai-responses-output.ts.
 */

type InputItem = Exclude<ResponsesRequest["input"], string>[number];

/** A message item counts its content; any other item (function call, its output, …) counts as its JSON. */
const itemContent = (item: InputItem) => ("content" in item ? item.content : item);

function toolChoiceOf(choice: ResponsesRequest["tool_choice"]): ToolChoice {
  if (typeof choice === "object" && choice?.type === "function" && choice.name) return { name: choice.name };
  return choice === "none" || choice === "required" ? choice : "auto";
}

function lastUserText(input: ResponsesRequest["input"]): string | undefined {
  if (typeof input === "string") return input;
  const last = input.at(-1);
  return last?.role === "user" ? textOf(last.content) : undefined;
}

function plan(req: ResponsesRequest): Plan {
  const digest = digestOf([req.model, req.instructions ?? null, req.input]);
  const hex = digest.toString("hex");
  const items = typeof req.input === "string" ? [req.input] : req.input.map(itemContent);
  const prompt = promptTokens(req.instructions ? [req.instructions, ...items] : items);

  const functions = (req.tools ?? []).flatMap((t) => (t.type === "function" && t.name ? [t.name] : []));
  const name = chosenFunction(functions, toolChoiceOf(req.tool_choice), lastUserText(req.input));
  const id = `resp_${hex.slice(0, 48)}`;
  if (name !== undefined) {
    // Function calls are never truncated by max_output_tokens.
    const args = JSON.stringify(TOOL_ARGUMENTS);
    const call = { id: `fc_${hex.slice(8, 56)}`, call_id: `call_${hex.slice(24, 48)}`, name, arguments: args };
    const usage = usageOf(prompt, toolCallTokens(name, args));
    return { id, itemId: call.id, pieces: argumentSlices(args), call, truncated: false, usage };
  }
  const reply = replyOf(digest, req.max_output_tokens);
  return { id, itemId: `msg_${hex.slice(8, 56)}`, pieces: reply.pieces, truncated: reply.truncated, usage: usageOf(prompt, reply.words) };
}

export const openaiResponsesRoute = new Hono<MockUpstreamEnv>().post("/v1/responses", async (c) => {
  const req = await parseBody(c, openai, responsesRequest);
  if (req instanceof Response) return req;
  const { omitUsage } = c.get("faults");
  const p = plan(req);
  return req.stream ? playEvents(c, responseEvents(req, p, omitUsage)) : c.json(responseObject(req, p, true, omitUsage));
});
