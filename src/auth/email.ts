/**
 * The one form of an e-mail address the gateway stores, looks up and throttles by (docs/auth.md, "E-mail
 * addresses"): trimmed, NFKC (fullwidth and compatibility characters become their plain letters), then lower
 * case by JavaScript's `toLowerCase`, which is locale-independent. Each code point is lowered on its own so
 * the context rule for a final sigma does not make one address two. U+0130 (İ) lowers to "i̇" (i followed by
 * a combining dot), not "i": Unicode's own mapping, so `rİta@…` is an address of its own, never `rita@…`. The
 * last NFKC keeps the function idempotent: a stored address normalises to itself.
 */
export function normaliseEmail(email: string): string {
  let lowered = "";
  for (const ch of email.trim().normalize("NFKC")) lowered += ch.toLowerCase();
  return lowered.normalize("NFKC");
}
