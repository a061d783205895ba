import { isatty } from "node:tty";
import pino, { type DestinationStream, type Logger } from "pino";
import pretty from "pino-pretty";

// Header and field names that may carry a credential (the client's own upstream key included: its header, and
// `apiKey` of the provider call options); pino drops them should any object holding them be logged.
const redact = {
  paths: [
    "*.authorization",
    "*.cookie",
    "*['x-api-key']",
    "*['x-goog-api-key']",
    "*['x-upstream-api-key']",
    "*.password",
    "*.api_key",
    "*.apiKey",
    "*.key",
  ],
  censor: "[redacted]",
};

// Every log line is bounded (docs/security.md, "Input validation and logs"): a string field is cut at
// LOG_STRING_MAX_CHARS, nesting and lists are cut short, and an error becomes its class, driver code and a cut
// message. A driver error's message and fields quote the statement's parameters (drizzle's DrizzleQueryError
// says "params: …", pg's `detail` quotes the offending value), so those never reach a line: one hostile
// request must not write the request, whole, into the log.

export const LOG_STRING_MAX_CHARS = 1024;
const LOG_DEPTH_MAX = 4;
const LOG_ITEMS_MAX = 32;
const LOG_STACK_FRAMES = 12;
/** Fields that carry a statement's parameters, whatever object holds them. */
const PARAMETER_KEYS = new Set(["params", "parameters", "values", "detail"]);
/** What a database error may say of itself besides its class and message: codes and names, never values. */
const ERROR_FIELDS = ["code", "constraint", "table", "column", "routine", "status", "failure", "errno", "syscall"] as const;

const cut = (value: string, max = LOG_STRING_MAX_CHARS) => (value.length > max ? `${value.slice(0, max)}…[${value.length} chars]` : value);

/** An error's message without the parameters a query error appends to it. */
function errorMessage(err: Error): string {
  const message = typeof err.message === "string" ? err.message : "";
  const params = message.indexOf("\nparams:");
  return cut(params === -1 ? message : message.slice(0, params));
}

function errorLog(err: Error, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = { type: err.constructor?.name ?? err.name, message: errorMessage(err) };
  const fields = err as unknown as Record<string, unknown>;
  for (const field of ERROR_FIELDS) {
    const value = fields[field];
    if (typeof value === "string" || typeof value === "number") out[field] = typeof value === "string" ? cut(value, 128) : value;
  }
  // The frames only: the stack's first line repeats the message, parameters and all.
  if (typeof err.stack === "string") {
    const frames = err.stack
      .split("\n")
      .filter((line) => line.startsWith("    at "))
      .slice(0, LOG_STACK_FRAMES);
    out.stack = `${out.type}: ${out.message}\n${frames.map((line) => cut(line, 256)).join("\n")}`;
  }
  if (err.cause !== undefined) out.cause = boundLogValue(err.cause, depth + 1);
  return out;
}

/** A logged value, bounded: what a log line may carry of it (see above). */
export function boundLogValue(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return cut(value);
  if (value === null || typeof value !== "object") return value;
  if (depth >= LOG_DEPTH_MAX) return "[nested too deep]";
  if (value instanceof Error) return errorLog(value, depth);
  if (Array.isArray(value)) {
    const items = value.slice(0, LOG_ITEMS_MAX).map((item) => boundLogValue(item, depth + 1));
    if (value.length > LOG_ITEMS_MAX) items.push(`…[${value.length} items]`);
    return items;
  }
  // Dates, buffers and other non-plain objects keep their own JSON form, bounded as text.
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) {
    return typeof (value as { toJSON?: unknown }).toJSON === "function"
      ? boundLogValue((value as { toJSON(): unknown }).toJSON(), depth + 1)
      : cut(String(value));
  }
  const out: Record<string, unknown> = {};
  let count = 0;
  for (const key of Object.keys(value)) {
    if (PARAMETER_KEYS.has(key)) continue;
    if (++count > LOG_ITEMS_MAX) {
      out["…"] = "[more fields]";
      break;
    }
    out[cut(key, 128)] = boundLogValue((value as Record<string, unknown>)[key], depth + 1);
  }
  return out;
}

const formatters = { log: (obj: Record<string, unknown>) => boundLogValue(obj) as Record<string, unknown> };
/** The formatter has already made every error a bounded object; pino's own error serializer would redo it. */
const serializers = { err: (value: unknown) => value };

/**
 * The message of a line is bounded like its fields (a message may be built from an error's). A line of an error
 * alone gets the error's cut message: pino would take its whole message, parameters and all.
 */
const hooks = {
  logMethod(this: Logger, args: unknown[], method: (...args: unknown[]) => void) {
    const first = args[0];
    if (args.length === 1 && first !== null && typeof first === "object") {
      const err = first instanceof Error ? first : (first as { err?: unknown }).err;
      if (err instanceof Error) args.push(errorMessage(err));
    }
    for (let i = 0; i < args.length; i++) if (typeof args[i] === "string") args[i] = cut(args[i] as string);
    method.apply(this, args);
  },
};

/** `json`: one object per line, for collectors; `pretty`: coloured lines for a person at a terminal. */
export const logFormats = ["pretty", "json"] as const;
export type LogFormat = (typeof logFormats)[number];

/** A format named on the command line or in the config wins; else pretty for a terminal and JSON for anything else. */
export function chooseLogFormat(named: LogFormat | "auto" | undefined, isTTY: boolean): LogFormat {
  if (named && named !== "auto") return named;
  return isTTY ? "pretty" : "json";
}

/**
 * Where log lines go: file descriptor `fd` as JSON, or as pretty lines formatted and written in this thread
 * (pino-pretty as a stream, not a worker-thread transport): a terminal is a person watching, not a load that
 * formatting would slow, and a line written at once is never lost to an exit.
 */
export function logDestination(format: LogFormat, fd = 1): DestinationStream {
  if (format === "json") return pino.destination({ fd, sync: false });
  return pretty({ destination: fd, colorize: isatty(fd), translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname,service", sync: true });
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, redact, formatters, hooks, serializers, base: { service: "gateway" } }, destination ?? logDestination("json"));
}

/**
 * The access log's own logger: the same destination, level and bindings as `logger`, without redaction, bounding
 * or hooks. Its one line per request carries only the gateway's own fields (the request id, the method, the
 * route pattern, the status, the latency), none of which can hold a secret or be unbounded, and the full
 * logger's machinery cost 15 µs of CPU a line against 5.5 without it (issue 30, docs/performance.md).
 */
export function accessLogger(logger: Logger): Logger {
  const stream = (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym];
  return pino({ level: logger.level, base: logger.bindings() }, stream);
}

export type { Logger };
