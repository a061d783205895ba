// The quota ledger's contract (DESIGN.md §5-6). One mechanism for every balance the spec names: an account
// (owner + kind + period) holds credits and posted/pending debits; a hold is a two-phase transfer against it:
// pending -> posted (settle) | voided (release) | expired. Quota units are bigint. A process holds a lease
// (escrow) on each busy account and takes its requests' holds out of it in memory (docs/billing.md).

/** The day's allowance in quota units (period: the UTC day), or a reseller's balance in nano-dollars (one perpetual period). */
export type AccountKind = "daily_allowance" | "reseller_usd";

export interface Hold {
  id: string;
  accountId: string;
  amount: bigint;
}

interface ReserveCommon {
  userId: string;
  /** Units to hold: the admission estimate, in the account's unit. */
  amount: bigint;
  requestId: string;
  /** The gateway process making the hold; its heartbeat decides when an abandoned hold expires. */
  instanceId: string;
  now?: Date;
}

export type ReserveInput = ReserveCommon &
  (
    | {
        kind?: "daily_allowance";
        /** The plan's daily allowance; applied to today's account (a plan change applies at once). */
        dailyAllowance: bigint;
      }
    | {
        /** The user's reseller balance: what the operator credited, less what was charged and is held. */
        kind: "reseller_usd";
      }
  );

export type ReserveResult =
  | { ok: true; hold: Hold }
  /** `allowance` is the account's credits (the day's allowance, or what a reseller was credited). */
  | { ok: false; allowance: bigint; used: bigint; reserved: bigint; resetsAt: Date };

export interface DailyBalance {
  /** The UTC day, YYYY-MM-DD. */
  day: string;
  allowance: bigint;
  /** Posted debits: settled charges (may exceed the allowance after an overshoot). */
  used: bigint;
  /** Pending holds. */
  reserved: bigint;
  /** allowance - used - reserved; negative after an overshoot. */
  remaining: bigint;
  resetsAt: Date;
}

export interface QuotaLedger {
  /**
   * Holds `amount` if today's remaining covers it, atomically across every process: out of this process's
   * lease when it covers the amount, else after a sync that grants more (calls waiting for one are admitted in
   * arrival order).
   */
  reserve(input: ReserveInput): Promise<ReserveResult>;
  /**
   * Posts the real charge (may exceed the hold: the service was delivered) and returns the hold's remainder;
   * resolves once the ledger has it. Also posts a hold that expired meanwhile. A hold settled or released
   * before throws HoldResolvedError.
   */
  settle(holdId: string, charged: bigint): Promise<void>;
  /** Voids a pending hold. A hold resolved before throws HoldResolvedError. */
  release(holdId: string): Promise<void>;
  /** Gives this process's unused leased units back to the accounts and waits until the ledger has everything. */
  flush(): Promise<void>;
  /** Closes this process's leases (at shutdown, after the last settlement). */
  close(): Promise<void>;
  /** Today's account of a user (zeros with the plan's allowance when nothing was used yet). */
  balance(userId: string, dailyAllowance: bigint, now?: Date): Promise<DailyBalance>;
  /** Expires the leases of dead processes (their units return to the accounts); returns how many. */
  expireAbandoned(now?: Date): Promise<number>;
  /** Adds `amount` nano-dollars to a user's reseller balance, with a record of the credit; returns the balance after it. */
  creditReseller(userId: string, amount: bigint, note: string): Promise<ResellerBalance>;
  /** A user's reseller balance (zeros when never credited). */
  resellerBalance(userId: string): Promise<ResellerBalance>;
}

/** A reseller's USD balance, in nano-dollars. */
export interface ResellerBalance {
  /** Everything the operator credited. */
  credited: bigint;
  /** Posted charges. */
  spent: bigint;
  /** Held by requests in flight and the gateway processes' leases. */
  reserved: bigint;
  /** credited - spent - reserved; negative after an overshoot. */
  available: bigint;
}

export class HoldResolvedError extends Error {
  constructor(readonly holdId: string) {
    super(`hold ${holdId} was already resolved`);
    this.name = "HoldResolvedError";
  }
}

/** A gateway process, known to the database by its heartbeat. */
export interface Instance {
  id: string;
  stop(): Promise<void>;
}
