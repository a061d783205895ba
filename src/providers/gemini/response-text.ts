import { asArray, asObject, asString } from "../json-guards.js";

// What a Gemini answer generated, as the gateway counts it when the upstream reports no usage: every candidate's
// text parts (thoughts included) and function calls (name and arguments). A streamed chunk is a
// GenerateContentResponse too, and carries each function call whole, so one rule reads both.

/** Appends the generated text of a GenerateContentResponse or of one streamed chunk. */
export function collectGenerateContentText(response: Record<string, unknown>, into: string[]): void {
  for (const candidate of asArray(response.candidates)) {
    for (const item of asArray(asObject(asObject(candidate)?.content)?.parts)) {
      const part = asObject(item);
      const text = asString(part?.text);
      if (text) into.push(text);
      const call = asObject(part?.functionCall);
      if (call) into.push(asString(call.name) ?? "", JSON.stringify(call.args ?? {}));
    }
  }
}
