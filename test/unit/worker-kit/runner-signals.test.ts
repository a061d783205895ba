import { EventEmitter } from "node:events";
import os from "node:os";
import { describe, expect, it } from "vitest";
import { stopOnSignals, type Runner } from "../../../worker-kit/runner/runner.js";

class FakeProcess extends EventEmitter {
  exits: number[] = [];
  exit(code: number) {
    this.exits.push(code);
  }
}

function fakeRunner() {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const runner = {
    stops: 0,
    start() {},
    stop() {
      runner.stops++;
      return done;
    },
    done,
  };
  return { runner: runner satisfies Runner, finish };
}

describe("stopOnSignals", () => {
  it("stops the runner on the first signal and resolves when it is done, then lets the signals go", async () => {
    const proc = new FakeProcess();
    const { runner, finish } = fakeRunner();
    const stopped = stopOnSignals(runner, ["SIGTERM", "SIGINT"], proc);
    expect(proc.listenerCount("SIGTERM")).toBe(1);
    proc.emit("SIGTERM", "SIGTERM");
    expect(runner.stops).toBe(1);
    expect(proc.exits).toEqual([]);
    finish();
    await stopped;
    expect(proc.listenerCount("SIGTERM")).toBe(0);
    expect(proc.listenerCount("SIGINT")).toBe(0);
  });

  it("exits at once on a second signal, with 128 plus its number", () => {
    const proc = new FakeProcess();
    const { runner } = fakeRunner();
    void stopOnSignals(runner, ["SIGTERM", "SIGINT"], proc);
    proc.emit("SIGTERM", "SIGTERM");
    proc.emit("SIGINT", "SIGINT");
    expect(runner.stops).toBe(1);
    expect(proc.exits).toEqual([128 + os.constants.signals.SIGINT]);
  });
});
