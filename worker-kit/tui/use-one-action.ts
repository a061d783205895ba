import { useCallback, useRef } from "react";

/**
 * A screen's actions run one at a time: a key pressed while one is in flight is ignored rather than queued (it
 * would act on a row or a lease about to change). A failure goes to the shell's error line.
 */
export function useOneAction(showError: (err: unknown) => void): (work: () => Promise<void>) => Promise<void> {
  const busy = useRef(false);
  return useCallback(
    async (work: () => Promise<void>) => {
      if (busy.current) return;
      busy.current = true;
      try {
        await work();
      } catch (err) {
        showError(err);
      } finally {
        busy.current = false;
      }
    },
    [showError],
  );
}
