import type { Context } from "hono";
import type { AppEnv } from "../server/context.js";
import type { UpstreamAbort } from "../providers/upstream-abort.js";

/** Whether the client went away before its response was finished (nothing more can be delivered). */
export function clientGone(c: Context<AppEnv>): boolean {
  const outgoing = c.env?.outgoing;
  return outgoing !== undefined && outgoing.destroyed && !outgoing.writableFinished;
}

/**
 * Aborts `controller` when the client goes away before the response finished, so the upstream request is
 * cancelled too. Returns the function that stops watching.
 */
export function clientDisconnect(c: Context<AppEnv>, controller: UpstreamAbort): () => void {
  const outgoing = c.env?.outgoing;
  if (!outgoing) return () => {};
  // The client may have left already (during authentication or the reservation): "close" will not fire again.
  if (clientGone(c)) {
    controller.abort();
    return () => {};
  }
  const onClose = () => {
    if (!outgoing.writableFinished) controller.abort();
  };
  outgoing.once("close", onClose);
  return () => outgoing.off("close", onClose);
}
