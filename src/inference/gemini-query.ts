import { z } from "zod";

/** Every Gemini route also takes the key in the query string, as Google's API does. */
export const geminiKeyQuery = z.object({
  key: z.string().optional().meta({ description: "The API key, when no header carries one (as Google's own API takes it)." }),
});
