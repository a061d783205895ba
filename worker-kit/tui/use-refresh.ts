import { useCallback, useEffect, useRef, useState } from "react";
import { describeError } from "../client/errors.js";
import type { RefreshFailure } from "./state/stale.js";

// A list that reads itself again every `every` ms (the queue, the incidents) unless paused (a field being typed
// in, a y/n question, the help overlay). A failed read keeps the data shown and records the failure for the stale
// mark; the next good one clears the mark and the shell's error line, so an old error never sits under fresh data.

export interface RefreshOptions {
  every: number;
  paused: boolean;
  clearError(): void;
  now(): number;
}

export interface Refresh {
  /** Reads now (a key, a new page); the timer's reads are skipped while one is in flight. */
  refresh(): Promise<void>;
  failure: RefreshFailure | null;
}

export function useRefresh(load: () => Promise<void>, { every, paused, clearError, now }: RefreshOptions): Refresh {
  const [failure, setFailure] = useState<RefreshFailure | null>(null);
  const inFlight = useRef(0);
  const refresh = useCallback(async () => {
    inFlight.current += 1;
    try {
      await load();
      setFailure(null);
      clearError();
    } catch (err) {
      const error = describeError(err);
      setFailure((f) => ({ since: f?.since ?? now(), error }));
    } finally {
      inFlight.current -= 1;
    }
  }, [load, clearError, now]);

  useEffect(() => {
    void refresh();
  }, [refresh]);
  useEffect(() => {
    if (paused) return;
    const timer = setInterval(() => {
      if (inFlight.current === 0) void refresh();
    }, every);
    return () => clearInterval(timer);
  }, [paused, every, refresh]);
  return { refresh, failure };
}
