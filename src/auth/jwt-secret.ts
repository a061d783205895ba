import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Config } from "../config/schema.js";
import type { Pool } from "../db/pool.js";

const SECRET_BYTES = 32;
const SECRET_NAME = "session_signing_key";
const MIN_LENGTH = 32;

export interface JwtSecretOptions {
  config: Config;
  env: NodeJS.ProcessEnv;
  pool: Pool;
}

/** The secret in a file, without the line ending an editor or `echo` adds; one line naming the key on failure. */
function readSecretFile(key: string, file: string): Uint8Array {
  let text: string;
  try {
    text = readFileSync(file, "utf8").replace(/\r?\n$/, "");
  } catch (err) {
    throw new Error(`${key} ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
  if (text.length < MIN_LENGTH) {
    throw new Error(`${key} ${file}: the secret must be at least ${MIN_LENGTH} characters long (it has ${text.length})`);
  }
  return Buffer.from(text, "utf8");
}

/**
 * The session signing secret, first found: `auth.jwt_secret`, `auth.jwt_secret_file`, GATEWAY_JWT_SECRET, else
 * one generated on first start and kept in the database (the embedded demo's default: every dump then carries
 * it), so restarts and every process sharing the database accept the same sessions.
 */
export async function loadJwtSecret(opts: JwtSecretOptions): Promise<Uint8Array> {
  const { auth } = opts.config;
  if (auth.jwt_secret) return Buffer.from(auth.jwt_secret, "utf8");
  if (auth.jwt_secret_file) return readSecretFile("auth.jwt_secret_file", auth.jwt_secret_file);
  const fromEnv = opts.env.GATEWAY_JWT_SECRET;
  if (fromEnv) {
    if (fromEnv.length < MIN_LENGTH) throw new Error(`GATEWAY_JWT_SECRET must be at least ${MIN_LENGTH} characters long`);
    return Buffer.from(fromEnv, "utf8");
  }
  // Insert-if-absent then read: processes starting together all end up with the first writer's secret. When
  // another process's insert commits while ours waits on the conflict, our statement's snapshot predates that
  // row and reads nothing; the next statement sees it.
  for (let attempt = 0; attempt < 3; attempt++) {
    const { rows } = await opts.pool.query<{ value: string }>(
      `with inserted as (
         insert into gateway_secrets (name, value) values ($1, $2) on conflict (name) do nothing returning value
       )
       select value from inserted union all select value from gateway_secrets where name = $1 limit 1`,
      [SECRET_NAME, randomBytes(SECRET_BYTES).toString("base64url")],
    );
    if (rows[0]) return Buffer.from(rows[0].value, "base64url");
  }
  throw new Error("the session signing secret could not be read from the database");
}

/** The secret of before a rotation (`auth.jwt_previous_secret_file`): sessions it signed stay valid. */
export function loadPreviousJwtSecret(config: Config): Uint8Array | null {
  const file = config.auth.jwt_previous_secret_file;
  return file ? readSecretFile("auth.jwt_previous_secret_file", file) : null;
}
