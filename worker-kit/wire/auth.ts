import { z } from "zod";
import { storedText } from "./text.js";

// The session's wire shapes: what login takes and answers. Pure zod, like ./support.ts, so worker-kit's staff client
// reads its types from the same source as the gateway's login route (which imports it from the package).

export const loginBody = z.object({ email: storedText().min(1), password: storedText().min(1) });
export type LoginBody = z.infer<typeof loginBody>;

export const publicUserSchema = z.object({
  id: z.string(),
  email: z.string(),
  role: z.enum(["user", "admin"]),
  plan: z.string(),
  created_at: z.iso.datetime(),
});

export type PublicUser = z.infer<typeof publicUserSchema>;

export const loginResultSchema = z.object({
  token: z.string().meta({ description: "The session token: send it as `Authorization: Bearer <token>` (or use the cookie)." }),
  csrf_token: z.string().meta({ description: "Send it as X-CSRF-Token on admin state changes." }),
  expires_at: z.iso.datetime(),
  user: publicUserSchema,
});

export type LoginResult = z.infer<typeof loginResultSchema>;
