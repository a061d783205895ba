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
  return pino({ level, redact, base: { service: "gateway" } }, destination ?? logDestination("json"));
}

export type { Logger };
