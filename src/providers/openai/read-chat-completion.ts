import { asArray, asObject, asString } from "../json-guards.js";

// Reading an OpenAI chat answer (JSON or a stream chunk) for the translations into other protocols.

/** Message or delta content: a string, or (some servers) an array of text parts. */
export function chatText(content: unknown): string {
  if (typeof content === "string") return content;
  return asArray(content)
    .map((part) => asString(asObject(part)?.text) ?? "")
    .join("");
}

/**
 * Tool arguments as an object. Arguments that are not a JSON object (a model's malformed call) become `{}`:
 * the client's own check of the call then rejects it like any other bad call, and no field is invented to
 * carry the raw text.
 */
export function parseToolArguments(args: unknown): Record<string, unknown> {
  if (typeof args !== "string") return asObject(args) ?? {};
  try {
    return asObject(JSON.parse(args)) ?? {};
  } catch {
    return {};
  }
}
