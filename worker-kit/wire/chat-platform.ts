import { z } from "zod";
import { LOCALE } from "./user-cases.js";
import { cardSchema, MAX_CONTENT_CHARS, MESSAGE_ROLES } from "./support.js";

// The chat platform's wire shapes (docs/support.md, "Chat platform"): its control check before a delivery and
// its snapshot upsert. Pure zod, like ./support.ts, so the platform's worker can read its types from here. The
// schemas are strict: a field the gateway does not know (an owner, an account) is a 400, never ignored.

/** The most messages one snapshot carries: the platform sends its recent window, not the whole history. */
export const SNAPSHOT_MESSAGE_LIMIT = 100;

// Identifiers are printable ASCII without spaces: they are compared byte for byte and shown to staff as they are.
const identifier = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, { error: "must be 1 to 200 printable ASCII characters without spaces" });

export const controlRequestSchema = z.strictObject({ source_ref: identifier });
export type ControlRequest = z.infer<typeof controlRequestSchema>;

/** `case_id` and `revision` are absent for a channel the gateway has no case for. */
export const controlResponseSchema = z.strictObject({
  staff_hold: z.boolean(),
  case_id: z.uuid().optional(),
  revision: z.int().optional(),
});
export type ControlResponse = z.infer<typeof controlResponseSchema>;

export const snapshotMessageSchema = z.strictObject({
  /** The platform's own message id: a message already taken is skipped. */
  id: identifier,
  role: z.enum(MESSAGE_ROLES),
  content: z.string().max(MAX_CONTENT_CHARS),
  created_at: z.iso.datetime({ offset: true }).optional(),
});
export type SnapshotMessage = z.infer<typeof snapshotMessageSchema>;

export const snapshotRequestSchema = z.strictObject({
  source_ref: identifier,
  /** Kept from the last snapshot that gave one; a new channel without one is `en`. */
  locale: z.string().max(35).regex(LOCALE, { error: "must be a language tag such as en or pt-BR" }).optional(),
  card: cardSchema.optional(),
  /** True takes the case over (the staff hold); false or absent never clears a hold: only a resume does. */
  staff_active: z.boolean().optional(),
  messages: z.array(snapshotMessageSchema).max(SNAPSHOT_MESSAGE_LIMIT),
});
export type SnapshotRequest = z.infer<typeof snapshotRequestSchema>;

export const snapshotResponseSchema = z.strictObject({
  case_id: z.uuid(),
  revision: z.int(),
  staff_hold: z.boolean(),
  /** How many of the snapshot's messages were new (the others were taken by an earlier snapshot). */
  inserted: z.int().min(0),
});
export type SnapshotResponse = z.infer<typeof snapshotResponseSchema>;
