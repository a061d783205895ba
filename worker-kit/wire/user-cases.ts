import { z } from "zod";
import { cardSchema, evidenceSchema, LIST_LIMIT, MAX_CONTENT_CHARS, requestFactsSchema, transcriptMessageSchema } from "./support.js";
import { pageSizeQuery } from "./query.js";

// What the user side of the support workspace takes and answers (docs/support.md, "Cases (user side)"). Every
// answer schema is strict and has no private field: no owner or account id, no source_ref, no private draft, no
// job internals (ids, leases, attempts), no incident aggregate. test/integration/support-cases.test.ts validates
// every user answer of a scenario against these, so a field added to an answer without being added here fails.

/** A BCP-47-ish language tag: `en`, `pt-BR`, `zh-Hant-TW`. */
export const LOCALE = /^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8}){0,4}$/;

export const createCaseBody = z.strictObject({
  request_id: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x21-\x7e]+$/, { error: "must be a request ID as the X-Request-Id header gave it" })
    .meta({ description: "The X-Request-Id of the request the case is about." }),
  locale: z
    .string()
    .max(35)
    .regex(LOCALE, { error: "must be a language tag such as en or pt-BR" })
    .meta({ description: "The language the answers should be written in." }),
  question: z.string().min(1).max(MAX_CONTENT_CHARS).optional().meta({ description: "The first user message of the case." }),
});
export type CreateCaseBody = z.infer<typeof createCaseBody>;

export const messageBody = z.strictObject({
  content: z.string().min(1).max(MAX_CONTENT_CHARS),
});

export const listQuery = z.object({
  limit: pageSizeQuery(
    { min: LIST_LIMIT.min, max: LIST_LIMIT.max, fallback: LIST_LIMIT.default },
    `Cases per page, ${LIST_LIMIT.min} to ${LIST_LIMIT.max} (default ${LIST_LIMIT.default}).`,
  ),
  cursor: z.string().optional().meta({ description: "The `next_cursor` of the previous page." }),
});

const caseBase = z.strictObject({
  id: z.uuid(),
  request_id: z.string().nullable(),
  locale: z.string(),
  status: z.enum(["open", "resolved"]),
  /** The user asked for staff: their messages go to staff, not to the automatic answers. */
  handoff: z.boolean(),
  /** Staff have taken the case over: no automatic answer is published until they resume. */
  staff_hold: z.boolean(),
  revision: z.int(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
  resolved_at: z.iso.datetime().nullable(),
});

/** A case in the user's list. */
export const userCaseSummarySchema = caseBase.extend({
  model: z.string().nullable().meta({ description: "The public model of the cited request." }),
  problem: z.string().nullable().meta({ description: "The card's problem, once an answer wrote one." }),
});
export type UserCaseSummary = z.infer<typeof userCaseSummarySchema>;

export const userCaseSchema = caseBase.extend({
  facts: requestFactsSchema.nullable(),
  card: cardSchema.nullable(),
  incident_summary: z
    .string()
    .nullable()
    .meta({ description: "The public summary of a published incident covering this case, else null." }),
});
export type UserCase = z.infer<typeof userCaseSchema>;

/** What the case's published answers cost the workers; `cost_usd` null when some part of it is unknown. */
export const caseUsageSchema = z.strictObject({
  model_calls: z.int(),
  tool_calls: z.int(),
  input_tokens: z.int(),
  output_tokens: z.int(),
  cost_usd: z.string().nullable(),
});

export const userEvidenceSchema = evidenceSchema.extend({ created_at: z.iso.datetime() });

export const userCaseDetailSchema = z.strictObject({
  case: userCaseSchema,
  messages: z.array(transcriptMessageSchema).meta({ description: "The latest messages, oldest first." }),
  evidence: z.array(userEvidenceSchema),
  usage: caseUsageSchema,
  history_truncated: z.boolean().meta({ description: "True when older messages exist than those shown." }),
});
export type UserCaseDetail = z.infer<typeof userCaseDetailSchema>;

export const userCasePageSchema = z.strictObject({
  cases: z.array(userCaseSummarySchema),
  next_cursor: z.string().optional().meta({ description: "Pass as `cursor` for the next (older) page; absent on the last page." }),
});
export type UserCasePage = z.infer<typeof userCasePageSchema>;

/** The answer of create and of every case action: the case as it now is. */
export const userCaseResultSchema = z.strictObject({ case: userCaseSchema });
export type UserCaseResult = z.infer<typeof userCaseResultSchema>;

export const userMessageResultSchema = z.strictObject({ case: userCaseSchema, message: transcriptMessageSchema });
export type UserMessageResult = z.infer<typeof userMessageResultSchema>;
