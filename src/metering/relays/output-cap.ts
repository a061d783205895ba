import { countTextTokens } from "../estimate.js";

// When a stream has said too much (issue 20, item 13; docs/billing.md, "Streams that overrun"). An upstream that
// ignores the request's output limit would otherwise be relayed, and billed, for as long as it talks. The
// relay counts the UTF-8 bytes of the generated text it delivers (every token is at least one byte, so bytes
// bound tokens from above) and asks the tokenizer only once that bound passes the cap, and then only for the
// text since its last count, each time after at least the bytes the cap still allows: never per event.

export interface StreamOutputLimits {
  overrun_ratio: number;
  overrun_tokens: number;
}

/**
 * The tokens a stream may deliver before it is ended: its output limit (the request's, capped by the model's
 * `max_output_tokens`; the model's when the request sets none; none when neither does) for each of `choices`,
 * plus the overrun allowed. Null: no cap.
 */
export function streamOutputCap(
  requested: number | null | undefined,
  modelMax: number | undefined,
  choices: number,
  limits: StreamOutputLimits,
): number | null {
  const perChoice = requested == null ? modelMax : modelMax === undefined ? requested : Math.min(requested, modelMax);
  if (perChoice === undefined) return null;
  const limit = perChoice * choices;
  return limit + Math.max(Math.ceil(limit * limits.overrun_ratio), limits.overrun_tokens);
}

/** The fewest bytes between two counts near the cap, so that a stream close to it is not counted per event. */
const MIN_STEP_BYTES = 16;

/** The output of one stream against its cap. `text` is the protocol's list of delivered generated text. */
export class OutputMeter {
  /** Entries of `text` already measured in bytes. */
  private measured = 0;
  /** Entries of `text` already counted by the tokenizer. */
  private counted = 0;
  private bytes = 0;
  private tokens = 0;
  /** Bytes at which the bound next passes the cap. */
  private nextCheck: number;

  constructor(
    private readonly text: readonly string[],
    private readonly cap: number,
  ) {
    this.nextCheck = cap + 1;
  }

  /**
   * After a batch: false when the output is surely within the cap, else the tokenizer's verdict on whether it is
   * past it (a promise, only at the intervals above).
   */
  check(): false | Promise<boolean> {
    const { text } = this;
    for (let i = this.measured; i < text.length; i++) this.bytes += Buffer.byteLength(text[i]!);
    this.measured = text.length;
    if (this.bytes < this.nextCheck) return false;
    const bytes = this.bytes;
    const fresh = text.slice(this.counted, this.measured).join("");
    this.counted = this.measured;
    return countTextTokens(fresh).then((tokens) => {
      this.tokens += tokens;
      // Until the bytes since this count could hold the tokens the cap still allows, the output is within it.
      this.nextCheck = bytes + Math.max(this.cap + 1 - this.tokens, MIN_STEP_BYTES);
      return this.tokens > this.cap;
    });
  }
}
