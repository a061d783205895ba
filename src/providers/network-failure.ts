import type { NetworkFailure } from "./types.js";

// undici and Node report network failures by error code; the codes are kept, the messages (which name hosts
// and addresses) are not.

const BY_CODE: Readonly<Record<string, NetworkFailure>> = {
  ECONNREFUSED: "connection_refused",
  ENOTFOUND: "dns",
  EAI_AGAIN: "dns",
  EAI_FAIL: "dns",
  EAI_NONAME: "dns",
  ECONNRESET: "connection_reset",
  EPIPE: "connection_reset",
  UND_ERR_SOCKET: "connection_reset",
  UND_ERR_CLOSED: "connection_reset",
  EHOSTUNREACH: "network_unreachable",
  ENETUNREACH: "network_unreachable",
  EHOSTDOWN: "network_unreachable",
  EPROTO: "tls",
  UND_ERR_CONNECT_TIMEOUT: "connect_timeout",
  ETIMEDOUT: "connect_timeout",
  UND_ERR_HEADERS_TIMEOUT: "first_byte_timeout",
  UND_ERR_BODY_TIMEOUT: "idle_timeout",
};

/** OpenSSL's and Node's TLS codes (ERR_SSL_WRONG_VERSION_NUMBER, CERT_HAS_EXPIRED, DEPTH_ZERO_SELF_SIGNED_CERT, ...). */
const TLS_CODE = /^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_(GET|VERIFY)_)|SELF_SIGNED_CERT|_CERT_/;

function codeOf(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string") return code;
  // Some failures wrap the socket's error.
  return err instanceof Error && err.cause !== err ? codeOf(err.cause) : undefined;
}

/** The kind of a failed upstream request's network error. */
export function networkFailureOf(err: unknown): NetworkFailure {
  const code = codeOf(err);
  if (code === undefined) return "other";
  return BY_CODE[code] ?? (TLS_CODE.test(code) ? "tls" : "other");
}
