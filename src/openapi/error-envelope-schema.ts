import { z } from "zod";
import { ERROR_CODES, ERROR_TYPES, type ErrorCode } from "../errors.js";

/** The gateway error envelope (docs/architecture.md, "Rules"), the same on every route; it also matches OpenAI's `ErrorResponse`. */
export const errorEnvelopeSchema = z.object({
  error: z.object({
    message: z.string().meta({ description: "What went wrong and what to do, in English; never upstream text." }),
    type: z.enum(ERROR_TYPES),
    code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]).meta({ description: "The gateway's error code (docs/api.md)." }),
    param: z.string().nullable().meta({ description: "The request field at fault, as `messages[0].role`; null when none is." }),
    request_id: z.string().nullable().meta({ description: "The X-Request-Id of the request: cite it in a support case." }),
  }),
});
