import type { Logger } from "pino";
import type { Config } from "../config/schema.js";
import { isTransientDbError, requestRead, type RequestRead } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Listener } from "../db/listener.js";
import type { Pool } from "../db/pool.js";
import type { ApiKeyPrincipal } from "./principals.js";
import { keyLookup, toKeyPrincipal, type KeyRow } from "./key-principal.js";
import { API_KEY_CHANNEL } from "./key-notify.js";
import { hashApiKey, looksLikeApiKey } from "./api-key-secret.js";
import type { ApiKeyAuthenticator } from "./types.js";
import { extended } from "../objects.js";

const MAX_CACHED = 10_000;
const TOUCH_INTERVAL_MS = 60_000;

interface CacheEntry {
  principal: ApiKeyPrincipal;
  expiresAt: number;
}

const LOOKUP = keyLookup("auth_api_key_lookup", "secret_hash");

export interface KeyAuthenticatorOptions {
  pool: Pool;
  config: Config;
  logger: Logger;
  /** The process's LISTEN connection; without one nothing would tell this process about revocations, so the cache stays off. */
  listener?: Listener;
  /** Where failures to record a key's last use are reported when the database is away. */
  health?: DatabaseHealth;
}

/** The authenticator as the key service in the same process sees it. */
export interface LocalKeyCache extends ApiKeyAuthenticator {
  /**
   * Drops one key at once. NOTIFY reaches this process too, but only after a round trip; the revoking request
   * must not be answered before its own process has forgotten the key.
   */
  forget(hash: string): void;
}

/**
 * Resolves API keys with a per-process positive cache. Every revocation in any process NOTIFYs the key's hash
 * on a LISTEN connection. While that connection is down nothing new is cached, and what is cached keeps serving
 * until its TTL (`auth.key_cache_ttl_seconds`): requests of known keys go on through a database outage, during
 * which no revocation can commit anyway. When the connection is back the whole cache is dropped, so a revocation
 * made while it was down (the database up, only the listener cut) is honoured at once then, and never later
 * than the TTL.
 */
class CachedKeyAuthenticator implements LocalKeyCache {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly lastTouched = new Map<string, number>();
  private readonly ttlMs: number;
  // Bumped on every invalidation; a lookup that raced with one does not cache what it read.
  private generation = 0;
  private listening = false;
  /** A lookup is a request's read: a dead pooled connection is retried, under database.request_timeout_ms. */
  private readonly read: RequestRead;

  constructor(private readonly opts: KeyAuthenticatorOptions) {
    this.ttlMs = opts.config.auth.key_cache_ttl_seconds * 1000;
    this.read = requestRead(opts.config.database.request_timeout_ms, (err) => opts.health?.failed(err, "api key lookup"));
  }

  start(): void {
    const { listener } = this.opts;
    if (!listener || this.ttlMs <= 0) return;
    listener.on(API_KEY_CHANNEL, (hash) => this.forget(hash));
    listener.onState((up) => {
      // Revocations while we were deaf were missed: nothing read before this point may be served from the cache.
      if (up) this.invalidateAll();
      // What is cached serves until its TTL; nothing new is cached until the connection is back.
      else this.generation++;
      this.listening = up;
    });
    this.listening = listener.listening();
  }

  async authenticate(secret: string): Promise<ApiKeyPrincipal | null> {
    if (!looksLikeApiKey(secret)) return null;
    const hash = hashApiKey(secret);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached) {
      if (cached.expiresAt > now) {
        this.touch(cached.principal.keyId, now);
        return cached.principal;
      }
      this.cache.delete(hash);
    }
    const generation = this.generation;
    // A key this process does not know needs the database (then 503 database_unavailable, never 500).
    const { pool } = this.opts;
    const { rows } = await this.read(() => pool.query<KeyRow>(extended(LOOKUP, { values: [hash] })));
    this.opts.health?.ok();
    const row = rows[0];
    if (!row) return null;
    const principal = toKeyPrincipal(row);
    if (this.listening && generation === this.generation) this.remember(hash, principal, now);
    this.touch(row.id, now);
    return principal;
  }

  async close(): Promise<void> {
    this.listening = false;
    this.invalidateAll();
  }

  forget(hash: string) {
    this.generation++;
    this.cache.delete(hash);
  }

  private remember(hash: string, principal: ApiKeyPrincipal, now: number) {
    if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(hash, { principal, expiresAt: now + this.ttlMs });
  }

  private invalidateAll() {
    this.generation++;
    this.cache.clear();
  }

  /** last_used_at is informational: written at most once a minute per key, never awaited by the request. */
  private touch(keyId: string, now: number) {
    const last = this.lastTouched.get(keyId);
    if (last !== undefined && now - last < TOUCH_INTERVAL_MS) return;
    if (this.lastTouched.size >= MAX_CACHED) this.lastTouched.clear();
    this.lastTouched.set(keyId, now);
    this.opts.pool.query("update api_keys set last_used_at = now() where id = $1", [keyId]).catch((err: unknown) => {
      if (this.opts.health && isTransientDbError(err)) this.opts.health.failed(err, "api key last use");
      else this.opts.logger.warn({ err, key_id: keyId }, "recording api key last use failed");
    });
  }
}

export function createApiKeyAuthenticator(opts: KeyAuthenticatorOptions): LocalKeyCache {
  const authenticator = new CachedKeyAuthenticator(opts);
  authenticator.start();
  return authenticator;
}
