import { EventEmitter } from "node:events";
import os from "node:os";
import { describe, expect, it } from "vitest";
import { stopOnSignals, type Runner, type StopOptions } from "../../../worker-kit/runner/runner.js";

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
    stops: [] as (StopOptions | undefined)[],
    givenBack: 0,
    start() {},
    stop(options?: StopOptions) {
      runner.stops.push(options);
      return done;
    },
    giveBack() {
      runner.givenBack++;
      return done;
    },
    done,
  };
  return { runner: runner satisfies Runner, finish };
}

const SIGINT_EXIT = 128 + os.constants.signals.SIGINT;

describe("stopOnSignals", () => {
  it("stops the runner on the first signal, saying how to give the jobs back, and lets the signals go when done", async () => {
    const proc = new FakeProcess();
    const { runner, finish } = fakeRunner();
    const stopped = stopOnSignals(runner, ["SIGTERM", "SIGINT"], proc);
    expect(proc.listenerCount("SIGINT")).toBe(1);
    proc.emit("SIGINT", "SIGINT");
    expect(runner.stops).toEqual([{ hint: "Ctrl-C again gives them back now" }]);
    expect(runner.givenBack).toBe(0);
    finish();
    await stopped;
    expect(proc.exits).toEqual([]);
    expect(proc.listenerCount("SIGTERM")).toBe(0);
    expect(proc.listenerCount("SIGINT")).toBe(0);
  });

  it("names the signal in the hint when it is not Ctrl-C", () => {
    const proc = new FakeProcess();
    const { runner } = fakeRunner();
    void stopOnSignals(runner, ["SIGTERM", "SIGINT"], proc);
    proc.emit("SIGTERM", "SIGTERM");
    expect(runner.stops).toEqual([{ hint: "SIGTERM again gives them back now" }]);
  });

  it("gives the jobs back on a second signal, and exits with 128 plus its number once they are back", async () => {
    const proc = new FakeProcess();
    const { runner, finish } = fakeRunner();
    const stopped = stopOnSignals(runner, ["SIGTERM", "SIGINT"], proc);
    proc.emit("SIGINT", "SIGINT");
    proc.emit("SIGINT", "SIGINT");
    expect(runner.stops).toHaveLength(1);
    expect(runner.givenBack).toBe(1);
    // Not before every job is back.
    expect(proc.exits).toEqual([]);
    finish();
    await stopped;
    expect(proc.exits).toEqual([SIGINT_EXIT]);
  });

  it("exits at once on a third signal", () => {
    const proc = new FakeProcess();
    const { runner } = fakeRunner();
    void stopOnSignals(runner, ["SIGTERM", "SIGINT"], proc);
    for (let i = 0; i < 3; i++) proc.emit("SIGINT", "SIGINT");
    expect(runner.givenBack).toBe(1);
    expect(proc.exits).toEqual([SIGINT_EXIT]);
  });
});
