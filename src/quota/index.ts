export { createQuotaLedger } from "./ledger.js";
export { registerInstance } from "./instances.js";
export { nextResetAt, utcDay } from "./day.js";
export * from "./types.js";
