import { isIP } from "node:net";

/** True for a listen host only this machine can reach: `localhost`, 127.0.0.0/8, ::1. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (bare.toLowerCase() === "localhost") return true;
  if (isIP(bare) === 4) return bare.startsWith("127.");
  // The URL parser writes an IPv6 address in its shortest form: every spelling of ::1 becomes [::1].
  return isIP(bare) === 6 && new URL(`http://[${bare}]`).hostname === "[::1]";
}

/** True for a wildcard address: the server answers on every interface of the machine. */
export const isWildcardHost = (host: string): boolean => host === "0.0.0.0" || host === "::" || host === "[::]";
