import { setTimeout as sleep } from "node:timers/promises";
import { beforeEach } from "vitest";
import { LONGEST_GUARDED_MS, waitForOneUtcDay } from "./one-utc-day.js";

// Every test starts where the UTC day has room for its whole timeout (one-utc-day.ts). The clock is read through
// the real Date.now, bound here before any test can install fake timers.
const wallClock = Date.now.bind(Date);

beforeEach(async ({ task }) => {
  const wait = waitForOneUtcDay(wallClock(), task.timeout);
  if (wait > 0) await sleep(wait);
}, LONGEST_GUARDED_MS + 60_000);
