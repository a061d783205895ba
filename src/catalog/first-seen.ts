import type { Pool } from "../db/pool.js";

// Two statements, not one: under concurrent starts (several processes on one database) the second process's
// insert waits for the first's and skips the row, and only a later statement sees the row it committed.
const RECORD = `
insert into catalog_models (model_id, first_seen_at)
select unnest($1::text[]), $2::timestamptz
on conflict (model_id) do nothing`;

const READ = "select model_id, first_seen_at from catalog_models where model_id = any($1::text[])";

/**
 * Records the models seen for the first time at `now` and answers when each of `modelIds` first appeared, as
 * Unix seconds. Called once per config load by a serving process.
 */
export async function recordModelsFirstSeen(pool: Pool, modelIds: readonly string[], now: Date): Promise<Map<string, number>> {
  if (modelIds.length === 0) return new Map();
  await pool.query(RECORD, [modelIds, now]);
  const { rows } = await pool.query<{ model_id: string; first_seen_at: Date }>(READ, [modelIds]);
  return new Map(rows.map((r) => [r.model_id, Math.floor(r.first_seen_at.getTime() / 1000)]));
}
