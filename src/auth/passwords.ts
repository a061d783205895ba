import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";

// Stored as `scrypt$N$r$p$<salt base64>$<key base64>` so the parameters can be raised later without breaking
// existing hashes: verification always uses the parameters recorded in the hash.
const N = 16384;
const R = 8;
const P = 1;
const SALT_BYTES = 16;
const KEY_BYTES = 64;

// Bounds for parameters read back from storage, so a corrupt row cannot make one verification take minutes or
// gigabytes.
const MAX_N = 1 << 20;
const MAX_R = 32;
const MAX_P = 16;

// NFKC so a password typed on another OS or keyboard layout (composed vs decomposed accents) still matches.
function derive(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize("NFKC"), salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

// scrypt needs 128*N*r bytes; Node's default cap (32 MiB) would reject the upper end of the allowed range.
const memoryFor = (n: number, r: number) => 128 * n * r * 2;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, KEY_BYTES, { N, r: R, p: P, maxmem: memoryFor(N, R) });
  return ["scrypt", N, R, P, salt.toString("base64"), key.toString("base64")].join("$");
}

interface ParsedHash {
  n: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

function parse(stored: string): ParsedHash | null {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return null;
  const [n, r, p] = parts.slice(1, 4).map((s) => (/^\d{1,8}$/.test(s!) ? Number(s) : NaN)) as [number, number, number];
  const powerOfTwo = n > 1 && (n & (n - 1)) === 0;
  if (!powerOfTwo || n > MAX_N || !(r >= 1 && r <= MAX_R) || !(p >= 1 && p <= MAX_P)) return null;
  const salt = Buffer.from(parts[4]!, "base64");
  const key = Buffer.from(parts[5]!, "base64");
  if (salt.length < 8 || key.length < 16) return null;
  return { n, r, p, salt, key };
}

/** False for a wrong password and for a stored value that is not a hash this module wrote. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parse(stored);
  if (!parsed) return false;
  const { n, r, p, salt, key } = parsed;
  const candidate = await derive(password, salt, key.length, { N: n, r, p, maxmem: memoryFor(n, r) });
  return timingSafeEqual(candidate, key);
}
