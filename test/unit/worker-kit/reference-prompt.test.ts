import { describe, expect, it } from "vitest";
import { buildPrompt, NEEDS_STAFF_MARKER } from "../../../worker-kit/reference/prompt.js";
import { job } from "./reference-fixtures.js";

const transcript = [
  { role: "user" as const, content: "Warum schlägt das fehl?", created_at: "2026-01-02T03:05:00Z" },
  { role: "assistant" as const, content: "Der Anbieter war gestört.", created_at: "2026-01-02T03:05:10Z" },
  { role: "staff" as const, content: "Wir prüfen das.", created_at: "2026-01-02T03:06:00Z" },
  { role: "user" as const, content: "Und jetzt?", created_at: "2026-01-02T03:07:00Z" },
];

describe("buildPrompt", () => {
  it("answers in the case's locale from the facts, with the conversation as turns", () => {
    const messages = buildPrompt({ kind: "answer", context: job("answer", { transcript }).context });
    const system = messages[0]!;
    expect(system.role).toBe("system");
    expect(system.content).toContain('the locale "de"');
    expect(system.content).toContain('"request_id":"req_abc123"');
    expect(system.content).toContain(NEEDS_STAFF_MARKER);
    expect(messages.slice(1)).toEqual([
      { role: "user", content: "Warum schlägt das fehl?" },
      { role: "assistant", content: "Der Anbieter war gestört." },
      { role: "assistant", content: "[support engineer] Wir prüfen das." },
      { role: "user", content: "Und jetzt?" },
    ]);
  });

  it("asks for a diagnosis when the case has no question", () => {
    const messages = buildPrompt({ kind: "answer", context: job("answer").context });
    expect(messages).toHaveLength(2);
    expect(messages[1]).toEqual({ role: "user", content: "What went wrong with this request, and what should I do?" });
  });

  it("says so when there are no facts, or older messages were left out, and shows the current card", () => {
    const card = { problem: "P", facts: [], hypotheses: ["H"], checks: [], missing: [], next_step: "N", confidence: 0.5 };
    const context = job("answer", { facts: null, history_truncated: true, card }).context;
    const system = buildPrompt({ kind: "answer", context })[0]!.content;
    expect(system).toContain("none: the case cites no request the gateway found.");
    expect(system).toContain("Older messages of the conversation are left out.");
    expect(system).toContain('{"problem":"P","hypotheses":["H"],"next_step":"N"}');
  });

  it("writes drafts about the conversation, for staff, without the staff marker", () => {
    for (const kind of ["staff_draft", "operator_draft", "bug_draft"] as const) {
      const messages = buildPrompt({ kind, context: job(kind, { transcript, locale: "pt-BR" }).context });
      expect(messages).toHaveLength(2);
      expect(messages[0]!.content).toContain('the locale "pt-BR"');
      expect(messages[0]!.content).not.toContain(NEEDS_STAFF_MARKER);
      expect(messages[1]!.role).toBe("user");
      expect(messages[1]!.content).toContain("staff: Wir prüfen das.");
    }
    const [bug, operator] = [
      buildPrompt({ kind: "bug_draft", context: job("bug_draft").context }),
      buildPrompt({ kind: "operator_draft", context: job("operator_draft").context }),
    ];
    expect(bug[0]!.content).toMatch(/bug report/);
    expect(operator[0]!.content).toMatch(/operator/);
  });
});
