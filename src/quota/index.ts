export { createQuotaLedger, type LedgerOptions } from "./ledger.js";
export { registerInstance } from "./instances.js";
export { nextResetAt, utcDay } from "../time/day.js";
export { ManualClock } from "../time/clock.js";
export * from "./types.js";
export { pruneLedger } from "./retention-sql.js";
export { reconcileLedger, type LedgerMismatch } from "./reconcile-sql.js";
export type { Journal } from "./lease-sql.js";
