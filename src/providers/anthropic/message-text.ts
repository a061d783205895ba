import { asArray, asObject, asString } from "../json-guards.js";

// What an Anthropic answer generated, as the gateway counts it when the upstream reports no usage: text,
// thinking, and tool calls (name and input). One rule for a Message and its stream, so the same answer costs the
// same either way.

/** Appends the generated text of a Message's `content` blocks. */
export function collectMessageText(content: unknown, into: string[]): void {
  for (const item of asArray(content)) {
    const block = asObject(item);
    if (!block) continue;
    for (const field of ["text", "thinking"]) {
      const text = asString(block[field]);
      if (text) into.push(text);
    }
    if (block.type === "tool_use") into.push(asString(block.name) ?? "", JSON.stringify(block.input ?? {}));
  }
}

/** Appends what one stream event generated: a tool call's name when its block starts, then every delta. */
export function collectMessageStreamText(data: Record<string, unknown>, into: string[]): void {
  if (data.type === "content_block_start") {
    const name = asString(asObject(data.content_block)?.name);
    if (name) into.push(name);
    return;
  }
  if (data.type !== "content_block_delta") return;
  const delta = asObject(data.delta);
  const text = asString(delta?.text) ?? asString(delta?.thinking) ?? asString(delta?.partial_json);
  if (text) into.push(text);
}
