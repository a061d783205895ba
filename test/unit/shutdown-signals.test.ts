import { describe, expect, it } from "vitest";
import { shutdownSignals } from "../../src/runtime/shutdown-signals.js";

describe("shutdown signals", () => {
  it("drains on the first, hurries on the second, exits on the third", () => {
    let t = 0;
    const next = shutdownSignals({ echoMs: 500, now: () => t });
    const steps = [0, 1_000, 2_000].map((at) => ((t = at), next()));
    expect(steps).toEqual(["drain", "hurry", "exit"]);
  });

  it("ignores npm's echo of the first Ctrl-C, then counts the next one", () => {
    let t = 0;
    const next = shutdownSignals({ echoMs: 500, now: () => t });
    const steps = [0, 10, 499, 500, 501].map((at) => ((t = at), next()));
    expect(steps).toEqual(["drain", "ignore", "ignore", "hurry", "exit"]);
  });
});
