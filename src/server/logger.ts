import pino, { type DestinationStream, type Logger } from "pino";

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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, redact, base: { service: "gateway" } }, destination ?? pino.destination({ fd: 1, sync: false }));
}

export type { Logger };
