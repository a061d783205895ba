import { describe, expect, it } from "vitest";
import { scrubText } from "../../src/support/chat-platform/scrub.js";

describe("scrubText", () => {
  it("keeps ordinary text, tabs and newlines", () => {
    expect(scrubText("Hello,\tworld\nsecond line — ünïcode ✓")).toBe("Hello,\tworld\nsecond line — ünïcode ✓");
  });

  it("makes every line break a newline", () => {
    expect(scrubText("a\r\nb\rc")).toBe("a\nb\nc");
  });

  it("removes control characters and bidirectional overrides", () => {
    expect(scrubText("a\u0000b\u001bc\u007fd\u0085e")).toBe("abcde");
    expect(scrubText("pay \u202eusd 01\u202c now \u2066x\u2069")).toBe("pay usd 01 now x");
  });

  it("replaces lone surrogates and trims", () => {
    expect(scrubText("  x\ud800y  \n")).toBe("x\ufffdy");
  });

  it("leaves nothing of a message that was only hidden characters", () => {
    expect(scrubText("\u0000 \u202e \r\n")).toBe("");
  });
});
