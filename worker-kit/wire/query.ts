import { z } from "zod";

// Query parameters as the gateway reads them (a wire module: zod only, so worker-kit may read it too).

/**
 * A page size in the query string: digits only, `min`..`max`, `fallback` when absent; every refusal says the
 * range, so `limit=0`, `limit=1e3` and `limit=abc` read alike.
 */
export function pageSizeQuery(range: { min: number; max: number; fallback: number }, description: string) {
  const message = `must be an integer from ${range.min} to ${range.max}`;
  return z
    .string()
    .regex(new RegExp(`^\\d{1,${String(range.max).length}}$`), { error: message })
    .transform(Number)
    .pipe(z.number().min(range.min, { error: message }).max(range.max, { error: message }))
    .default(range.fallback)
    .meta({ description });
}
