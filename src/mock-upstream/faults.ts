import { setTimeout as sleep } from "node:timers/promises";
import type { Context, MiddlewareHandler } from "hono";
import { z } from "zod";
import type { Faults, MockUpstreamEnv } from "./context.js";
import { dialectFor } from "./dialects.js";
import { GEMINI_IMAGE_FAULTS } from "./gemini-image-faults.js";
import { IMAGE_KINDS, IMAGE_USAGES } from "./openai-images-faults.js";
import { INVALID_ANSWERS } from "./systemone-evaluator.js";

/**
 * Fault injection for the mock upstream, driven only by request headers so that request bodies stay valid
 * provider requests and each test controls its own request. A malformed header value counts as absent (a test
 * typo degrades to a normal answer instead of a confusing mock error). docs/mock-upstream.md lists them all.
 */

export const MAX_DELAY_MS = 60_000;

const nonNegativeInt = z
  .string()
  .trim()
  .regex(/^\d{1,9}$/)
  .transform(Number);
const delay = nonNegativeInt.transform((ms) => Math.min(ms, MAX_DELAY_MS));
const flag = z
  .string()
  .trim()
  .toLowerCase()
  .transform((v) => v === "1" || v === "true");

/** Each field falls back to undefined on its own, so one bad header never disables the others. */
const faultHeaders = z.object({
  "x-mock-status": nonNegativeInt.pipe(z.number().min(400).max(599)).optional().catch(undefined),
  "x-mock-retry-after": z
    .string()
    .trim()
    .refine((v) => /^\d+$/.test(v) || !Number.isNaN(Date.parse(v)))
    .optional()
    .catch(undefined),
  "x-mock-retry-after-ms": nonNegativeInt.optional().catch(undefined),
  "x-mock-delay-ms": delay.optional().catch(undefined),
  "x-mock-chunk-delay-ms": delay.optional().catch(undefined),
  "x-mock-drop-after": nonNegativeInt.optional().catch(undefined),
  "x-mock-omit-usage": flag.optional().catch(undefined),
  "x-mock-no-base64": flag.optional().catch(undefined),
  "x-mock-zero-usage": flag.optional().catch(undefined),
  "x-mock-invalid-answer": z.string().trim().toLowerCase().pipe(z.enum(INVALID_ANSWERS)).optional().catch(undefined),
  "x-mock-image": z.string().trim().toLowerCase().pipe(z.enum(IMAGE_KINDS)).optional().catch(undefined),
  "x-mock-image-usage": z.string().trim().toLowerCase().pipe(z.enum(IMAGE_USAGES)).optional().catch(undefined),
  "x-mock-gemini-image": z.string().trim().toLowerCase().pipe(z.enum(GEMINI_IMAGE_FAULTS)).optional().catch(undefined),
});

export function parseFaults(headers: Headers): Faults {
  const raw: Record<string, string> = {};
  for (const name of Object.keys(faultHeaders.shape)) {
    const value = headers.get(name);
    if (value !== null) raw[name] = value;
  }
  const h = faultHeaders.parse(raw);
  return {
    status: h["x-mock-status"],
    retryAfter: h["x-mock-retry-after"],
    retryAfterMs: h["x-mock-retry-after-ms"],
    delayMs: h["x-mock-delay-ms"],
    chunkDelayMs: h["x-mock-chunk-delay-ms"],
    dropAfter: h["x-mock-drop-after"],
    omitUsage: h["x-mock-omit-usage"] ?? false,
    noBase64: h["x-mock-no-base64"] ?? false,
    zeroUsage: h["x-mock-zero-usage"] ?? false,
    invalidAnswer: h["x-mock-invalid-answer"],
    image: h["x-mock-image"],
    imageUsage: h["x-mock-image-usage"],
    geminiImage: h["x-mock-gemini-image"],
  };
}

function injectedError(c: Context, f: Faults & { status: number }): Response {
  // The marker word lets gateway tests assert that raw upstream error bodies never reach their clients.
  const message = `Mock upstream injected HTTP ${f.status} (upstream-secret-detail).`;
  const res = dialectFor(c.req.path).fault(c, f.status, message);
  if (f.retryAfter !== undefined) res.headers.set("Retry-After", f.retryAfter);
  if (f.retryAfterMs !== undefined) res.headers.set("retry-after-ms", String(f.retryAfterMs));
  return res;
}

/**
 * Parses the fault headers once per request (routes read them from `c.get("faults")`), applies the delay before
 * anything is sent, then answers an injected status (in the vendor's error shape) instead of running the route.
 */
export function injectFaults(): MiddlewareHandler<MockUpstreamEnv> {
  return async function mockFaults(c, next) {
    const faults = parseFaults(c.req.raw.headers);
    c.set("faults", faults);
    // The signal fires when the client goes away, so an abandoned slow request does not keep a timer alive.
    if (faults.delayMs) await sleep(faults.delayMs, undefined, { signal: c.req.raw.signal }).catch(() => {});
    if (faults.status !== undefined) return injectedError(c, { ...faults, status: faults.status });
    await next();
  };
}
