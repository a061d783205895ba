import type { Config } from "../config/schema.js";
import type { Transport } from "../server/listen.js";

/**
 * The server's connection bounds from `server.*`. Node's request timeout is only a backstop (it answers a bare
 * 408 with no envelope): it leaves room for the head and then the whole body timeout, which cuts first.
 */
export const transportOf = (server: Config["server"]): Transport => ({
  maxConnections: server.max_connections,
  headersTimeoutMs: server.headers_timeout_ms,
  requestTimeoutMs: server.headers_timeout_ms + server.body_timeout_ms + server.connections_check_interval_ms,
  checkIntervalMs: server.connections_check_interval_ms,
});
