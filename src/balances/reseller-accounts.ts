import { z } from "zod";
import type { UserService } from "../auth/types.js";
import { formatUsd, parseUsd } from "../billing/usd.js";
import { errors } from "../errors.js";
import type { AccountBalance, QuotaLedger } from "../quota/types.js";
import type { Idempotency, Keyed } from "./idempotency.js";

// Reseller pay-as-you-go balances: operators credit one (`gateway reseller credit`, or the admin endpoint with
// CSRF) and read any; a user reads their own. Amounts are exact decimal text in USD, both ways (docs/billing.md).
// A credit is idempotent by the caller's key, scoped to the credited user (idempotency.ts).

const usd = (description: string) => z.string().meta({ description: `${description}, exact decimal text in USD.` });

export const resellerBalanceSchema = z.object({
  user_id: z.string(),
  credited_usd: usd("Every credit"),
  spent_usd: usd("Charged to settled requests"),
  reserved_usd: usd("Held by requests in flight"),
  available_usd: usd("What new requests may spend"),
});

export type PublicResellerBalance = z.infer<typeof resellerBalanceSchema>;

export interface ResellerAccounts {
  /**
   * Adds `usd` (decimal text, at most 9 decimals) to the user's balance, with a note for the record; the balance
   * after it. The same `key` with the same amount and note again answers the first credit's balance and credits
   * nothing.
   */
  credit(user: string, usd: string, note?: string, key?: string): Promise<Keyed<PublicResellerBalance>>;
  balance(user: string): Promise<PublicResellerBalance>;
}

const MAX_NOTE = 500;

// A reseller balance has no restorations today; were it given any, they would count as credited.
const toPublic = (userId: string, b: AccountBalance): PublicResellerBalance => ({
  user_id: userId,
  credited_usd: formatUsd(b.credits + b.restored),
  spent_usd: formatUsd(b.used),
  reserved_usd: formatUsd(b.reserved),
  available_usd: formatUsd(b.remaining),
});

export function createResellerAccounts(deps: { ledger: QuotaLedger; users: UserService; idempotency: Idempotency }): ResellerAccounts {
  const userIdOf = async (idOrEmail: string): Promise<string> => (await deps.users.get(idOrEmail)).id;
  return {
    async credit(user, usd, note = "", key) {
      const amount = parseUsd(usd);
      if (amount === null || amount === 0n) {
        throw errors.badRequest(
          "usd must be a positive decimal amount of at most 1,000,000,000 with at most 9 decimals, such as 25 or 0.50.",
          "usd",
          "invalid_value",
        );
      }
      if (note.length > MAX_NOTE) throw errors.badRequest(`note must be at most ${MAX_NOTE} characters.`, "note", "invalid_value");
      const userId = await userIdOf(user);
      return deps.idempotency.run({
        operation: "reseller_credit",
        ownerId: userId,
        key,
        // The amount, not its spelling: 25 and 25.00 are the same credit.
        request: { nano_usd: String(amount), note },
        status: 201,
        work: async (client) => toPublic(userId, await deps.ledger.creditReseller(userId, amount, note, client)),
      });
    },
    async balance(user) {
      const userId = await userIdOf(user);
      return toPublic(userId, await deps.ledger.balance({ kind: "reseller_usd", userId, base: null }));
    },
  };
}
