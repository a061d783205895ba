// How long ago something happened, in the fewest cells that still read as a phrase: "just now", "45s ago",
// "12m ago", "3h ago", "5d ago". Under a second, or a timestamp in the future (clock skew between the gateway and
// this terminal), reads "just now".

const UNITS: Array<[suffix: string, ms: number]> = [
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1_000],
];

export function formatAge(iso: string, now: number): string {
  const elapsed = now - Date.parse(iso);
  if (!Number.isFinite(elapsed)) return "?";
  for (const [suffix, ms] of UNITS) {
    if (elapsed >= ms) return `${Math.floor(elapsed / ms)}${suffix} ago`;
  }
  return "just now";
}
