import type { Queryable } from "../db/pool.js";
import { idRange, oneId, type IdMatches, type IdNoun } from "../id-prefix.js";

// The one place a staff-side case or incident id, full or a prefix, becomes the row's id (docs/support.md, "Ids"):
// the staff routes and the `gateway cases` / `gateway incidents` commands all go through it.

const TABLES: Record<IdNoun, string> = { case: "support_cases", incident: "support_incidents" };

/** The id `input` names in the noun's table; 404 `not_found` for none, 400 `ambiguous_id` for several. */
export async function resolveId(db: Queryable, noun: IdNoun, input: string): Promise<string> {
  const range = idRange(input);
  if (range === null) return oneId(input, null, noun);
  const { rows } = await db.query<IdMatches>({
    name: `support_resolve_${noun}_id`,
    text: `select count(*)::int as count, min(id::text) as id from ${TABLES[noun]} where id between $1::uuid and $2::uuid`,
    values: [range.low, range.high],
  });
  return oneId(input, rows[0] ?? null, noun);
}
