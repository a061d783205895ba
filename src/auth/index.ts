import { drizzle } from "drizzle-orm/node-postgres";
import type { Logger } from "pino";
import type { Config } from "../config/schema.js";
import { requestRead } from "../db/faults.js";
import type { Pool } from "../db/pool.js";
import { drizzleTransactions } from "../db/transaction.js";
import { createApiKeyService } from "./api-keys.js";
import { insecureCookieWarning } from "./cookie.js";
import { createEmbedTokens } from "./embed-tokens.js";
import { loadJwtSecret, loadPreviousJwtSecret } from "./jwt-secret.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Listener } from "../db/listener.js";
import { createApiKeyAuthenticator } from "./key-authenticator.js";
import { createPasswordHasher } from "./passwords.js";
import { createSessionService } from "./sessions.js";
import type { AuthServices } from "./types.js";
import { createUserAccessService } from "./user-access.js";
import { createUserService } from "./users.js";

export interface AuthServiceOptions {
  pool: Pool;
  config: Config;
  logger: Logger;
  env: NodeJS.ProcessEnv;
  /** The serving process's LISTEN connection; admin commands have none, and therefore no key cache. */
  listener?: Listener;
  health?: DatabaseHealth;
}

export async function createAuthServices(opts: AuthServiceOptions): Promise<AuthServices> {
  const { pool, config, env } = opts;
  const logger = opts.logger.child({ component: "auth" });
  const db = drizzle(pool);
  const transaction = drizzleTransactions(pool);
  const secret = await loadJwtSecret({ config, env, pool });
  const previousSecret = loadPreviousJwtSecret(config);
  const { log_n: logN, concurrency } = config.auth.password_hash;
  if (logN < 17) logger.warn({ log_n: logN }, "auth.password_hash.log_n is below 17: weak password hashes, for tests only");
  const hasher = createPasswordHasher({ logN, concurrency });
  const cookieWarning = opts.listener ? insecureCookieWarning(config) : null;
  if (cookieWarning) logger.warn(cookieWarning);
  const botToken = env.SUPPORT_BOT_TOKEN || undefined;
  if (botToken && botToken.length < 32) logger.warn("SUPPORT_BOT_TOKEN is shorter than 32 characters; use a long random token");
  const keyAuth = createApiKeyAuthenticator({ pool, config, logger, listener: opts.listener, health: opts.health });
  const forget = (hash: string) => keyAuth.forget(hash);
  const users = createUserService(db, transaction, config, hasher, forget);
  return {
    users,
    userAccess: createUserAccessService({ db, transaction, onKeyChanged: forget }),
    apiKeys: createApiKeyService({ db, transaction, config, users, onChanged: forget }),
    sessions: createSessionService({
      db,
      config,
      secret,
      previousSecret,
      hasher,
      read: requestRead(config.database.request_timeout_ms, (err) => opts.health?.failed(err, "session lookup")),
    }),
    keyAuth,
    embedTokens: createEmbedTokens({
      pool,
      sessionSecret: secret,
      read: requestRead(config.database.request_timeout_ms, (err) => opts.health?.failed(err, "embed token key lookup")),
    }),
    botToken,
  };
}
