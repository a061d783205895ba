// What a call to the gateway can end in besides its answer. Both error kinds know whether trying again may help,
// so the runner and the TUI decide the same way: 429, 5xx and a connection that failed are worth a retry (after
// the gateway's Retry-After when it gave one); any other 4xx is an answer about the request, not the moment.

/** The gateway answered with its error envelope (or something that is not JSON, which is treated as a 5xx). */
export class GatewayHttpError extends Error {
  override readonly name = "GatewayHttpError";
  constructor(
    readonly status: number,
    /** The envelope's `code` (docs/api.md), or `http_<status>` when the body was not an envelope. */
    readonly code: string,
    message: string,
    readonly param: string | null,
    readonly requestId: string | null,
    /** Retry-After in milliseconds, when the gateway sent one. */
    readonly retryAfterMs: number | null,
  ) {
    super(message);
  }

  get retryable(): boolean {
    return this.status === 429 || this.status >= 500;
  }
}

/**
 * The gateway could not be reached, or did not answer in time: no answer to judge, so always retryable. Its message
 * names the gateway's URL and, when nothing answered there, what to check, so a worker, the CLI and the TUI all
 * say the same useful line.
 */
export class GatewayConnectionError extends Error {
  override readonly name = "GatewayConnectionError";
  readonly retryable = true;
  readonly retryAfterMs = null;
  constructor(
    /** The gateway's root the call went to (without any user name or password in it). */
    readonly baseUrl: string,
    /** The socket's error code (`ECONNREFUSED`), what failed when there is none, or how long the call waited. */
    readonly reason: string,
    /** Whether the gateway was reached but did not answer within the call's timeout. */
    readonly timedOut: boolean,
    options?: { cause?: unknown },
  ) {
    super(
      timedOut
        ? `the gateway at ${baseUrl} did not answer (${reason})`
        : `cannot reach the gateway at ${baseUrl} (${reason}): is \`gateway serve\` running there? set --url or GATEWAY_URL`,
      options,
    );
  }
}

export type GatewayCallError = GatewayHttpError | GatewayConnectionError;

export function isRetryable(err: unknown): err is GatewayCallError {
  return (err instanceof GatewayHttpError || err instanceof GatewayConnectionError) && err.retryable;
}

/** One line for a log or the TUI's error line: the code, the message, and the request id to cite. */
export function describeError(err: unknown): string {
  if (err instanceof GatewayHttpError) {
    const cite = err.requestId ? ` (request ${err.requestId})` : "";
    return `${err.status} ${err.code}: ${err.message}${cite}`;
  }
  if (err instanceof Error) return err.message;
  return String(err);
}
