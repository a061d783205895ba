import { readFileSync } from "node:fs";
import path from "node:path";
import { packageRoot } from "../package-root.js";

// scrypt pre-hashes any length, but an unbounded password is still a cheap way to burn CPU per login.
export const MAX_PASSWORD = 1024;

// The most common passwords of 8 or more characters (zxcvbn's list, MIT: data/common-passwords.LICENSE.txt), a
// text file beside migrations/ so it ships with the package as it is; read on first use, once per process.
const COMMON_PASSWORDS_FILE = path.join(packageRoot, "data", "common-passwords.txt");
let common: Set<string> | undefined;

function commonPasswords(): Set<string> {
  common ??= new Set(readFileSync(COMMON_PASSWORDS_FILE, "utf8").split("\n").filter(Boolean));
  return common;
}

/**
 * Why a new password is refused (OWASP ASVS: a minimum length, no known-common password, no composition
 * rules), or null. Length counts code points, so an emoji is one character as the user sees it.
 */
export function passwordProblem(password: string, minLength: number): string | null {
  const length = [...password].length;
  if (length < minLength) return `password must be at least ${minLength} characters long.`;
  if (length > MAX_PASSWORD) return `password must be at most ${MAX_PASSWORD} characters long.`;
  if (commonPasswords().has(password.normalize("NFKC").toLowerCase())) {
    return "password is one of the most common passwords; choose another.";
  }
  return null;
}
