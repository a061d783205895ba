import type { Services } from "../../src/runtime/services.js";

/**
 * Posts `amount` on the user's day through a gateway's ledger, as a settled request would (a hold of 0, charged
 * more: an overshoot is posted all the same), and waits until the ledger has it.
 */
export async function spendDay(s: Services, userId: string, base: number, amount: number): Promise<void> {
  const held = await s.ledger.reserve({ kind: "daily_allowance", userId, base: BigInt(base), amount: 0n, requestId: "spend" });
  if (!held.ok) throw new Error(`a hold of 0 for ${userId} was refused`);
  await s.ledger.settle(held.hold.id, BigInt(amount));
  await s.ledger.flush();
}
