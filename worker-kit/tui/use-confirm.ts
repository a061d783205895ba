import { useCallback, useRef, useState } from "react";

// A y/n question before an action that cannot be undone (resolving a case or an incident, publishing, completing
// a job...). The question is the shell's notice line; while it waits the screen takes every key (setCapturing),
// so the answer never reaches the shell's keys: `y` runs the action, any other key cancels it ([y/N]).

export interface Confirm {
  /** The question waiting for its answer, or null. */
  pending: string | null;
  ask(question: string, action: () => void): void;
  /** The answer to the pending question: y runs the action, anything else cancels it. */
  answer(input: string): void;
}

export function useConfirm(showNotice: (message: string | null) => void, setCapturing: (on: boolean) => void): Confirm {
  const [pending, setPending] = useState<string | null>(null);
  const action = useRef<(() => void) | null>(null);
  const ask = useCallback(
    (question: string, run: () => void) => {
      action.current = run;
      setPending(question);
      setCapturing(true);
      showNotice(`${question} [y/N]`);
    },
    [showNotice, setCapturing],
  );
  const answer = useCallback(
    (input: string) => {
      const run = action.current;
      action.current = null;
      setPending(null);
      setCapturing(false);
      if (input === "y" && run !== null) run();
      else showNotice("cancelled: nothing changed");
    },
    [showNotice, setCapturing],
  );
  return { pending, ask, answer };
}
