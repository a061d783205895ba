import type { Logger } from "pino";
import { createAuthServices } from "../auth/index.js";
import type { AuthServices } from "../auth/types.js";
import { createCatalog, type Catalog } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import type { Pool } from "../db/pool.js";

export interface Services {
  config: Config;
  pool: Pool;
  logger: Logger;
  auth: AuthServices;
  catalog: Catalog;
  close(): Promise<void>;
}

export interface ServiceOptions {
  config: Config;
  pool: Pool;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  /** Admin commands need no LISTEN connection for the key cache. */
  listen?: boolean;
}

/** The composition root shared by `serve`, the admin commands and the tests. */
export async function createServices(opts: ServiceOptions): Promise<Services> {
  const auth = await createAuthServices({
    pool: opts.pool,
    config: opts.config,
    logger: opts.logger,
    env: opts.env ?? process.env,
    listen: opts.listen ?? true,
  });
  return {
    config: opts.config,
    pool: opts.pool,
    logger: opts.logger,
    auth,
    catalog: createCatalog(opts.config),
    close: () => auth.keyAuth.close(),
  };
}
