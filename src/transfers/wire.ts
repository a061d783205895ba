import { z } from "zod";

// The token transfers' wire shapes (docs/api.md, "Token transfers"): the bodies the routes validate and the
// answers they give, one source for the routes, their OpenAPI description and the CLI.

const when = z.iso.datetime();

/** Printable ASCII, 1..255 characters, after the IETF Idempotency-Key draft and Stripe. */
export const idempotencyKey = z
  .string()
  .regex(/^[\x20-\x7e]{1,255}$/, "must be 1 to 255 printable ASCII characters")
  .meta({ description: "Your key for this send (1..255 printable ASCII characters), scoped to you, kept at least 24 hours." });

const amount = z
  .int()
  .min(1, "must be a positive integer")
  .max(Number.MAX_SAFE_INTEGER)
  .meta({ description: "Quota units to give, a positive integer." });
const recipient = z.string().min(1).max(320).meta({ description: "The recipient's email or user ID." });

export const sendBody = z.strictObject({ recipient, amount, idempotency_key: idempotencyKey });
export const previewBody = z.strictObject({ recipient, amount });
export const preferencesBody = z.strictObject({
  receive_disabled: z.boolean().meta({ description: "True: nobody can send you tokens." }),
});

export const transferRecord = z.object({
  id: z.string(),
  direction: z.enum(["sent", "received"]),
  counterparty: z.string().meta({ description: "The other user, as a masked email (`ri***@example.com`)." }),
  amount: z.int(),
  status: z.enum(["pending", "completed", "refused"]),
  reason: z
    .string()
    .nullable()
    .meta({ description: "Why a transfer was refused: `day_ended`, `recipient_unavailable` or `nothing_to_refill`; null otherwise." }),
  applied: z.int().nullable().meta({ description: "Units placed on the recipient's day; null while pending." }),
  returned: z.int().nullable().meta({ description: "Units the recipient could not take, given back to the sender; null while pending." }),
  day: z.string().meta({ description: "The UTC day (YYYY-MM-DD) whose allowances it moves." }),
  created_at: when,
  completed_at: when.nullable(),
});

export const limitsSchema = z.object({
  enabled: z.boolean(),
  min_amount: z.int(),
  send_daily_limit: z.int(),
  sending_left: z.int().meta({ description: "What you may still send today, pending sends counted." }),
  receive_daily_limit: z.int(),
  receiving_left: z.int().meta({ description: "What you may still receive today, pending transfers counted." }),
  service_left: z.int().meta({ description: "What every user together may still send today." }),
  transferable: z.int().meta({ description: "What you could send now: your remaining units, less what you received today." }),
  day: z.string(),
  renews_at: when.meta({ description: "When the day's limits renew (00:00 UTC)." }),
});

export const transfersAnswer = z.object({
  receive_disabled: z.boolean(),
  limits: limitsSchema,
  transfers: z.array(transferRecord).meta({ description: "Sent and received, newest first." }),
  next_cursor: z.string().optional(),
});

export const previewAnswer = z.object({
  recipient: z
    .string()
    .nullable()
    .meta({ description: "The recipient as a masked email; null when no user with that email or ID accepts transfers." }),
  amount: z.int(),
  allowed: z.boolean().meta({ description: "Whether a send of this amount would be accepted now." }),
  reason: z
    .enum([
      "recipient_unavailable",
      "own_account",
      "disabled",
      "below_minimum",
      "send_limit",
      "receive_limit",
      "service_limit",
      "insufficient",
    ])
    .nullable(),
});

export const policySchema = z.object({
  revision: z.int().meta({ description: "Send it back with a change; 0: the config's defaults, never saved." }),
  enabled: z.boolean(),
  min_amount: z.int(),
  send_daily_limit: z.int(),
  receive_daily_limit: z.int(),
  service_daily_limit: z.int(),
  updated_by: z.string().nullable(),
  updated_at: when.nullable(),
});

const limit = z.int().min(0).max(Number.MAX_SAFE_INTEGER);
export const policyBody = z.strictObject({
  revision: z.int().min(0).meta({ description: "The revision the policy was read at; a stale one is 409 and changes nothing." }),
  enabled: z.boolean(),
  min_amount: z.int().min(1).max(Number.MAX_SAFE_INTEGER),
  send_daily_limit: limit,
  receive_daily_limit: limit,
  service_daily_limit: limit,
});

export const adminTransfersAnswer = z.object({
  transfers: z.array(
    z.object({
      id: z.string(),
      sender_id: z.string(),
      sender_email: z.string(),
      recipient_id: z.string(),
      recipient_email: z.string(),
      amount: z.int(),
      status: z.enum(["pending", "completed", "refused"]),
      reason: z.string().nullable(),
      applied: z.int().nullable(),
      returned: z.int().nullable(),
      day: z.string(),
      created_at: when,
      completed_at: when.nullable(),
    }),
  ),
});

export type TransferRecord = z.infer<typeof transferRecord>;
export type PublicPolicy = z.infer<typeof policySchema>;
export type PolicyBody = z.infer<typeof policyBody>;
