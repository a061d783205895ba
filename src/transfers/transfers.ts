import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { Logger } from "pino";
import type { z } from "zod";
import { normaliseEmail } from "../auth/email.js";
import type { Config } from "../config/schema.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import { errors, GatewayError } from "../errors.js";
import { isUuid } from "../ids.js";
import type { Clock } from "../time/clock.js";
import type { QuotaLedger } from "../quota/types.js";
import { nextResetAt, utcDay } from "../time/day.js";
import {
  completeRows,
  countLookup,
  dayTotals,
  earlierTransfer,
  historyRows,
  latestRows,
  lookupsThisMinute,
  readPolicyRow,
  savePolicyRow,
  sendRows,
  setReceiveDisabled,
  type TransferRow,
} from "./transfers-sql.js";
import { backgroundCompletion } from "./completion.js";
import { refusalOf, transferableOf, type DayTotals, type PolicyValues, type SendRefusal } from "./rules.js";
import type { adminTransfersAnswer, PolicyBody, previewAnswer, PublicPolicy, TransferRecord, transfersAnswer } from "./wire.js";

// Daily token transfers (docs/billing.md, "Token transfers"): the rules around transfers-sql.ts. The sender is
// always the session's user; the recipient is named by email or user ID, and an unknown one reads exactly like
// one who does not accept transfers.

export interface SendInput {
  recipient: string;
  amount: number;
  idempotency_key: string;
}

export interface Transfers {
  /** `pending`: answered 202; otherwise the transfer ended (200). */
  send(sender: { userId: string; plan: string }, input: SendInput): Promise<{ pending: boolean; transfer: TransferRecord }>;
  preview(sender: { userId: string; plan: string }, input: { recipient: string; amount: number }): Promise<z.infer<typeof previewAnswer>>;
  setReceiveDisabled(userId: string, disabled: boolean): Promise<boolean>;
  list(user: { userId: string; plan: string }, cursor: string | undefined, limit: number): Promise<z.infer<typeof transfersAnswer>>;
  policy(): Promise<PublicPolicy>;
  savePolicy(body: PolicyBody, updatedBy: string): Promise<PublicPolicy>;
  latest(userId: string | null): Promise<z.infer<typeof adminTransfersAnswer>>;
  /**
   * Ends a pending transfer once (the sending process's own completion, and graphile-worker's complete_transfer);
   * undefined for an unknown id.
   */
  complete(id: string): Promise<TransferRow | undefined>;
  /** Waits for the completions this process has under way, retrying none after (shutdown). */
  close(): Promise<void>;
}

/** `ri***@example.com`: enough to recognise a recipient, not to learn an address. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf("@");
  const local = at < 0 ? email : email.slice(0, at);
  return `${local.slice(0, local.length > 2 ? 2 : 1)}***${at < 0 ? "" : email.slice(at)}`;
}

/** What a user's record and an admin's row both show of a transfer. */
const outcomeOf = (t: TransferRow) => ({
  amount: Number(t.amount),
  status: t.status,
  reason: t.reason,
  applied: t.applied === null ? null : Number(t.applied),
  returned: t.returned === null ? null : Number(t.returned),
  day: t.day,
  created_at: t.createdAt.toISOString(),
  completed_at: t.completedAt?.toISOString() ?? null,
});

const toRecord = (t: TransferRow, viewer: string): TransferRecord => {
  const sent = t.senderId === viewer;
  const counterparty = maskEmail(sent ? t.recipientEmail : t.senderEmail);
  return { id: t.id, direction: sent ? "sent" : "received", counterparty, ...outcomeOf(t) };
};

const RECIPIENT = `select id::text, email, (disabled_at is not null or transfers_receive_disabled) as unavailable from users where `;
const BY_ID = `${RECIPIENT} id = $1::uuid`;
const BY_EMAIL = `${RECIPIENT} email = $1::text`;
const RECEIVE_FLAG = `select transfers_receive_disabled from users where id = $1::uuid`;

const CURSOR = /^(\d{4}-\d{2}-\d{2}T[\d:.]+Z)\|([0-9a-f-]{36})$/;

export function createTransfers(deps: {
  pool: Pool;
  config: Config;
  clock: Clock;
  ledger: QuotaLedger;
  logger: Logger;
  health: DatabaseHealth;
}): Transfers {
  const { pool, config, clock, ledger } = deps;
  const defaults = config.transfers;
  const baseOf = (plan: string) => BigInt(Object.hasOwn(config.plans, plan) ? config.plans[plan]!.daily_tokens : 0);
  const complete = (id: string) => completeRows(pool, id, { today: utcDay(clock.now()), baseOf });
  const completion = backgroundCompletion({ complete, logger: deps.logger, health: deps.health });

  const fromConfig = (): PolicyValues => ({
    enabled: defaults.enabled,
    minAmount: BigInt(defaults.min_amount),
    sendDailyLimit: BigInt(defaults.send_daily_limit),
    receiveDailyLimit: BigInt(defaults.receive_daily_limit),
    serviceDailyLimit: BigInt(defaults.service_daily_limit),
  });
  const policyValues = async (client: Pool | pg.PoolClient): Promise<PolicyValues> => (await readPolicyRow(client)) ?? fromConfig();

  /** The recipient a sender named: undefined when no user with that email or ID accepts transfers. */
  async function recipientOf(named: string): Promise<{ id: string; email: string } | undefined> {
    const needle = named.trim();
    const { rows } = await pool.query<{ id: string; email: string; unavailable: boolean }>(isUuid(needle) ? BY_ID : BY_EMAIL, [
      isUuid(needle) ? needle : normaliseEmail(needle),
    ]);
    const row = rows[0];
    return row && !row.unavailable ? { id: row.id, email: row.email } : undefined;
  }

  const unavailable = () => errors.badRequest("recipient: no user with that email or ID accepts transfers.", "recipient", "invalid_value");
  const ownAccount = () => errors.badRequest("recipient: you cannot send tokens to yourself.", "recipient", "invalid_value");

  function refusal(r: SendRefusal, amount: number): GatewayError {
    switch (r.refused) {
      case "disabled":
        return errors.forbidden("Token transfers are disabled by the operator.", "transfers_disabled");
      case "below_minimum":
        return errors.badRequest(`amount: the smallest transfer is ${r.minimum} units.`, "amount", "invalid_value");
      case "send_limit":
        return new GatewayError({
          code: "transfer_limit_exceeded",
          param: "amount",
          message: `You can send ${r.left} more units today (your daily send limit, pending transfers counted).`,
        });
      case "receive_limit":
        return new GatewayError({
          code: "transfer_limit_exceeded",
          param: "amount",
          message: `The recipient cannot receive ${amount} more units today (their daily receive limit).`,
        });
      case "service_limit":
        return new GatewayError({
          code: "transfer_limit_exceeded",
          param: "amount",
          message: `The service can move ${r.left} more units today (its daily limit over every user).`,
        });
      case "insufficient":
        return new GatewayError({
          code: "insufficient_transferable",
          param: "amount",
          message: `You can transfer at most ${r.transferable} units now: your remaining units after requests in flight, less what you received today.`,
        });
    }
  }

  const keyReused = () =>
    new GatewayError({
      code: "idempotency_key_reused",
      param: "idempotency_key",
      message: "This idempotency key was used for another transfer (another recipient or amount); use a new key.",
    });

  const rateLimited = () =>
    new GatewayError({
      code: "transfer_rate_limited",
      message: `At most ${defaults.lookups_per_minute} previews, and sends to no one who accepts transfers, a minute; try again in a minute.`,
      headers: { "Retry-After": "60" },
    });

  /** Whether a send names the recipient of an earlier transfer, as an email (any spelling) or an ID. */
  const names = (named: string, t: TransferRow) => {
    const needle = named.trim();
    return isUuid(needle) ? needle.toLowerCase() === t.recipientId : normaliseEmail(needle) === t.recipientEmail;
  };

  /**
   * A send's answer: its transfer as it is now. A pending one is then completed in the background (the send has
   * committed; the answer does not wait): by the sending process, and again on a replay, whose first sending
   * process may have stopped.
   */
  const sendAnswer = (t: TransferRow, viewer: string) => {
    if (t.status === "pending") completion.start(t.id);
    return { pending: t.status === "pending", transfer: toRecord(t, viewer) };
  };

  async function send(sender: { userId: string; plan: string }, input: SendInput) {
    // A replay is answered whatever happened since (the recipient turned receiving off, the lookup budget ran out).
    const earlier = await earlierTransfer(pool, sender.userId, input.idempotency_key);
    if (earlier) {
      if (!names(input.recipient, earlier) || earlier.amount !== BigInt(input.amount)) throw keyReused();
      return sendAnswer(earlier, sender.userId);
    }
    // The lookup budget: past it, no send learns whether a recipient exists (docs/api.md, "Token transfers").
    if ((await lookupsThisMinute(pool, sender.userId, clock.now())) >= defaults.lookups_per_minute) throw rateLimited();
    const recipient = await recipientOf(input.recipient);
    if (recipient?.id === sender.userId) throw ownAccount();
    if (!recipient) {
      await countLookup(pool, sender.userId, clock.now());
      throw unavailable();
    }
    const now = clock.now();
    const outcome = await sendRows(
      pool,
      {
        id: randomUUID(),
        holdId: randomUUID(),
        senderId: sender.userId,
        recipientId: recipient.id,
        idempotencyKey: input.idempotency_key,
        amount: BigInt(input.amount),
        day: utcDay(now),
        senderBase: baseOf(sender.plan),
        // Past the day, the completion voids it; the ledger's expiry only if no completion ever ran.
        holdExpiresAt: new Date(nextResetAt(now).getTime() + 86_400_000),
      },
      policyValues,
    );
    if (outcome.outcome === "key_reused") throw keyReused();
    if (outcome.outcome === "refused") throw refusal(outcome, input.amount);
    return sendAnswer(outcome.transfer, sender.userId);
  }

  /** The user's remaining units today (allowance + restored − used − held), as the send reads them. */
  const remainingOf = async (user: { userId: string; plan: string }) =>
    (await ledger.balance({ kind: "daily_allowance", userId: user.userId, base: baseOf(user.plan) })).remaining;

  async function limitsOf(user: { userId: string; plan: string }) {
    const now = clock.now();
    const day = utcDay(now);
    const p = await policyValues(pool);
    const totals: DayTotals = await dayTotals(pool, day, user.userId, user.userId);
    const left = (limit: bigint, used: bigint) => Number(limit > used ? limit - used : 0n);
    return {
      enabled: p.enabled,
      min_amount: Number(p.minAmount),
      send_daily_limit: Number(p.sendDailyLimit),
      sending_left: left(p.sendDailyLimit, totals.sent),
      receive_daily_limit: Number(p.receiveDailyLimit),
      receiving_left: left(p.receiveDailyLimit, totals.received),
      service_left: left(p.serviceDailyLimit, totals.service),
      transferable: Number(transferableOf(await remainingOf(user), totals)),
      day,
      renews_at: nextResetAt(now).toISOString(),
    };
  }

  async function preview(sender: { userId: string; plan: string }, input: { recipient: string; amount: number }) {
    if ((await countLookup(pool, sender.userId, clock.now())) > defaults.lookups_per_minute) throw rateLimited();
    const recipient = await recipientOf(input.recipient);
    const answer = (reason: z.infer<typeof previewAnswer>["reason"], shown: string | null) => ({
      recipient: shown,
      amount: input.amount,
      allowed: reason === null,
      reason,
    });
    // An unknown recipient and one who does not accept transfers: the same answer.
    if (!recipient) return answer("recipient_unavailable", null);
    if (recipient.id === sender.userId) return answer("own_account", null);
    const shown = maskEmail(recipient.email);
    const day = utcDay(clock.now());
    const totals = await dayTotals(pool, day, sender.userId, recipient.id);
    const transferable = transferableOf(await remainingOf(sender), totals);
    return answer(refusalOf(await policyValues(pool), totals, BigInt(input.amount), transferable)?.refused ?? null, shown);
  }

  async function list(user: { userId: string; plan: string }, cursor: string | undefined, limit: number) {
    let after: { createdAt: Date; id: string } | null = null;
    if (cursor !== undefined) {
      const m = CURSOR.exec(cursor);
      if (!m || Number.isNaN(Date.parse(m[1]!))) throw errors.badRequest("cursor: not a cursor this list gave.", "cursor", "invalid_value");
      after = { createdAt: new Date(m[1]!), id: m[2]! };
    }
    const rows = await historyRows(pool, user.userId, after, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const flag = (await pool.query<{ transfers_receive_disabled: boolean }>(RECEIVE_FLAG, [user.userId])).rows[0];
    const answer: z.infer<typeof transfersAnswer> = {
      receive_disabled: flag?.transfers_receive_disabled ?? false,
      limits: await limitsOf(user),
      transfers: page.map((t) => toRecord(t, user.userId)),
    };
    if (rows.length > limit && last) answer.next_cursor = `${last.createdAt.toISOString()}|${last.id}`;
    return answer;
  }

  async function policy(): Promise<PublicPolicy> {
    const row = await readPolicyRow(pool);
    const p = row ?? fromConfig();
    return {
      revision: row?.revision ?? 0,
      enabled: p.enabled,
      min_amount: Number(p.minAmount),
      send_daily_limit: Number(p.sendDailyLimit),
      receive_daily_limit: Number(p.receiveDailyLimit),
      service_daily_limit: Number(p.serviceDailyLimit),
      updated_by: row?.updatedBy ?? null,
      updated_at: row?.updatedAt?.toISOString() ?? null,
    };
  }

  async function savePolicy(body: PolicyBody, updatedBy: string): Promise<PublicPolicy> {
    const saved = await savePolicyRow(
      pool,
      body.revision,
      {
        enabled: body.enabled,
        minAmount: BigInt(body.min_amount),
        sendDailyLimit: BigInt(body.send_daily_limit),
        receiveDailyLimit: BigInt(body.receive_daily_limit),
        serviceDailyLimit: BigInt(body.service_daily_limit),
      },
      updatedBy,
    );
    if (saved === null) {
      const now = await policy();
      throw errors.conflict(
        `The policy changed since revision ${body.revision} (it is at revision ${now.revision}); read it again and resend your change.`,
      );
    }
    return policy();
  }

  async function latest(userId: string | null) {
    if (userId !== null && !isUuid(userId)) throw errors.badRequest("user_id: not a user ID.", "user_id", "invalid_value");
    const rows = await latestRows(pool, userId);
    return {
      transfers: rows.map((t) => ({
        id: t.id,
        sender_id: t.senderId,
        sender_email: t.senderEmail,
        recipient_id: t.recipientId,
        recipient_email: t.recipientEmail,
        ...outcomeOf(t),
      })),
    };
  }

  return {
    send,
    preview,
    setReceiveDisabled: (userId, disabled) => setReceiveDisabled(pool, userId, disabled),
    list,
    policy,
    savePolicy,
    latest,
    complete,
    close: () => completion.close(),
  };
}
