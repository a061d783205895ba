import type { Pool } from "../db/pool.js";
import { inTransaction } from "../db/transaction.js";

// The embed route's image cache in PostgreSQL (src/media/schema.ts), shared by every gateway process so that an
// identical request is generated, and billed, once. Bounded: an entry serves for `ttlSeconds` after it was
// generated, and each store evicts, under one lock, what has expired and then the least recently used entries
// until the total is within `maxBytes` (so the cap holds after every store, across processes). A claim (a row
// without bytes) marks an image being generated, so identical requests elsewhere wait for it rather than pay
// again; it lapses after `claimSeconds`, so a process that died mid-generation holds nobody up for longer.

export interface CachedImage {
  /** Null when the client's `If-None-Match` already names this entry (the bytes are not read). */
  bytes: Buffer | null;
  contentType: string;
  etag: string;
  expiresAt: Date;
}

export interface MediaCache {
  /** The live entry of `key`, marked used; null when there is none. */
  hit(key: string, ifNoneMatch: readonly string[]): Promise<CachedImage | null>;
  /** True when this caller now generates `key`: there was no live entry and no live claim. */
  claim(key: string, userId: string, model: string): Promise<boolean>;
  /** Stores a generated image in place of its claim and evicts down to the cap; false when it is larger than the cap. */
  store(key: string, userId: string, model: string, image: { bytes: Buffer; contentType: string; etag: string }): Promise<boolean>;
  /** Drops a claim whose generation failed, so a waiting request may claim it at once. */
  release(key: string): Promise<void>;
  readonly ttlSeconds: number;
}

export interface MediaCacheOptions {
  maxBytes: number;
  ttlSeconds: number;
  claimSeconds: number;
}

interface HitRow {
  bytes: Buffer | null;
  content_type: string;
  etag: string;
  expires_at: Date;
}

const HIT = `update media_cache set last_used_at = now()
              where key_hash = $1 and bytes is not null and expires_at > now()
          returning case when etag = any($2::text[]) or '*' = any($2::text[]) then null else bytes end as bytes, content_type, etag, expires_at`;

// A claim takes an absent key, or one whose entry or claim has lapsed.
const CLAIM = `insert into media_cache (key_hash, user_id, model, expires_at)
               values ($1, $2, $3, now() + make_interval(secs => $4))
               on conflict (key_hash) do update
                  set user_id = excluded.user_id, model = excluded.model, content_type = null, etag = null, bytes = null,
                      size_bytes = 0, created_at = now(), last_used_at = now(), expires_at = excluded.expires_at
                where media_cache.expires_at <= now()
            returning key_hash`;

const STORE = `insert into media_cache (key_hash, user_id, model, content_type, etag, bytes, size_bytes, expires_at)
               values ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))
               on conflict (key_hash) do update
                  set user_id = excluded.user_id, model = excluded.model, content_type = excluded.content_type,
                      etag = excluded.etag, bytes = excluded.bytes, size_bytes = excluded.size_bytes, created_at = now(),
                      last_used_at = now(), expires_at = excluded.expires_at`;

// Expired rows (entries and lapsed claims), then whatever the most recently used entries leave over the cap.
// The running total reads sizes only: the bytes themselves (TOASTed) are not fetched.
const EVICT = `with ranked as (
                 select key_hash, sum(size_bytes) over (order by last_used_at desc, key_hash) as running
                   from media_cache where bytes is not null and expires_at > now()
               )
               delete from media_cache
                where expires_at <= now() or key_hash in (select key_hash from ranked where running > $1)`;

/** One lock for every store: evictions computed side by side could each leave the other's entry over the cap. */
const EVICTION_LOCK = "select pg_advisory_xact_lock(hashtext('media_cache_eviction'))";

export function createMediaCache(pool: Pool, opts: MediaCacheOptions): MediaCache {
  return {
    ttlSeconds: opts.ttlSeconds,

    async hit(key, ifNoneMatch) {
      const { rows } = await pool.query<HitRow>(HIT, [key, ifNoneMatch]);
      const row = rows[0];
      return row ? { bytes: row.bytes, contentType: row.content_type, etag: row.etag, expiresAt: row.expires_at } : null;
    },

    async claim(key, userId, model) {
      const { rowCount } = await pool.query(CLAIM, [key, userId, model, opts.claimSeconds]);
      return rowCount === 1;
    },

    async store(key, userId, model, image) {
      if (image.bytes.length > opts.maxBytes) {
        await this.release(key);
        return false;
      }
      await inTransaction(pool, async (client) => {
        await client.query(EVICTION_LOCK);
        await client.query(STORE, [key, userId, model, image.contentType, image.etag, image.bytes, image.bytes.length, opts.ttlSeconds]);
        await client.query(EVICT, [opts.maxBytes]);
      });
      return true;
    },

    async release(key) {
      await pool.query("delete from media_cache where key_hash = $1 and bytes is null", [key]);
    },
  };
}
