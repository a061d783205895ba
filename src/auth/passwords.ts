import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { createSemaphore } from "./semaphore.js";

// Stored as `scrypt$N$r$p$<salt base64>$<key base64>` so the parameters can be raised later without breaking
// existing hashes: verification always uses the parameters recorded in the hash, and a successful login with
// other parameters than the current ones rehashes (sessions.ts).
const R = 8;
const P = 1;
const SALT_BYTES = 16;
const KEY_BYTES = 64;

// Bounds for parameters read back from storage, so a corrupt row cannot make one verification take minutes or
// gigabytes.
const MAX_N = 1 << 20;
const MAX_R = 32;
const MAX_P = 16;

export interface PasswordHasherOptions {
  /** log2 of scrypt's N: 17 (OWASP) in production; lower only in tests. */
  logN: number;
  /** Hash and verify computations running at once in this process; the rest queue. */
  concurrency: number;
}

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** False for a wrong password and for a stored value that is not a hash this module wrote. */
  verify(password: string, stored: string): Promise<boolean>;
  /** True when the stored hash was made with other parameters than the current ones. */
  outdated(stored: string): boolean;
}

// NFKC so a password typed on another OS or keyboard layout (composed vs decomposed accents) still matches.
function derive(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize("NFKC"), salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

// scrypt needs 128*N*r bytes; Node's default cap (32 MiB) would reject N=2^17 and the upper end of the range.
const memoryFor = (n: number, r: number) => 128 * n * r * 2;

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

/**
 * scrypt at N=2^17 takes 128 MiB per computation: the semaphore bounds what a login flood across many addresses
 * (each under its own throttle) can make one process hold to `concurrency` times that.
 */
export function createPasswordHasher({ logN, concurrency }: PasswordHasherOptions): PasswordHasher {
  const n = 2 ** logN;
  const slots = createSemaphore(concurrency);

  async function hash(password: string): Promise<string> {
    const salt = randomBytes(SALT_BYTES);
    const key = await slots.run(() => derive(password, salt, KEY_BYTES, { N: n, r: R, p: P, maxmem: memoryFor(n, R) }));
    return ["scrypt", n, R, P, salt.toString("base64"), key.toString("base64")].join("$");
  }

  async function verify(password: string, stored: string): Promise<boolean> {
    const parsed = parse(stored);
    if (!parsed) return false;
    const { salt, key } = parsed;
    const options = { N: parsed.n, r: parsed.r, p: parsed.p, maxmem: memoryFor(parsed.n, parsed.r) };
    const candidate = await slots.run(() => derive(password, salt, key.length, options));
    return timingSafeEqual(candidate, key);
  }

  function outdated(stored: string): boolean {
    const parsed = parse(stored);
    return !parsed || parsed.n !== n || parsed.r !== R || parsed.p !== P || parsed.key.length !== KEY_BYTES;
  }

  return { hash, verify, outdated };
}
