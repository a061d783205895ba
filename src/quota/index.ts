export { createQuotaLedger, type LedgerOptions } from "./ledger.js";
export { registerInstance } from "./instances.js";
export { nextResetAt, utcDay } from "./day.js";
export { ACCOUNT_KINDS, accountKinds } from "./account-kinds.js";
export { ManualClock, systemClock, type Clock } from "./clock.js";
export type { Journal } from "./lease-sql.js";
export * from "./types.js";
export { pruneLedger, type LedgerRetention } from "./retention-sql.js";
export { reconcileLedger, type LedgerMismatch, type Reconciled } from "./reconcile-sql.js";
