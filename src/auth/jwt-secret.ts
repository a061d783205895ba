import { randomBytes } from "node:crypto";
import type { Config } from "../config/schema.js";
import type { Pool } from "../db/pool.js";

const SECRET_BYTES = 32;
const SECRET_NAME = "session_signing_key";

export interface JwtSecretOptions {
  config: Config;
  env: NodeJS.ProcessEnv;
  pool: Pool;
}

/**
 * The session signing secret: config, else GATEWAY_JWT_SECRET, else one generated on first start and kept in
 * the database, so restarts and every process sharing the database accept the same sessions.
 */
export async function loadJwtSecret(opts: JwtSecretOptions): Promise<Uint8Array> {
  const configured = opts.config.auth.jwt_secret ?? opts.env.GATEWAY_JWT_SECRET;
  if (configured) {
    if (configured.length < 32) throw new Error("GATEWAY_JWT_SECRET must be at least 32 characters long");
    return Buffer.from(configured, "utf8");
  }
  // Insert-if-absent then read: processes starting together all end up with the first writer's secret.
  const { rows } = await opts.pool.query<{ value: string }>(
    `with inserted as (
       insert into gateway_secrets (name, value) values ($1, $2) on conflict (name) do nothing returning value
     )
     select value from inserted union all select value from gateway_secrets where name = $1 limit 1`,
    [SECRET_NAME, randomBytes(SECRET_BYTES).toString("base64url")],
  );
  return Buffer.from(rows[0]!.value, "base64url");
}
