import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { faultCode } from "../db/faults.js";
import type { TimedQuery } from "../db/pool.js";
import { COLUMNS, copyTextRows } from "./copy-rows.js";
import { batchParameter, INSERT_ROWS } from "./row-json.js";

const COPY_ROWS = `copy request_logs (${COLUMNS.join(", ")}) from stdin`;
const UNIQUE_VIOLATION = "23505";

/**
 * Writes a batch of encoded rows (row-json.ts) so that a batch sent again writes none of its rows twice: the
 * writer's and the outbox's retry after a lost reply. COPY in text format, at about 1.8 times the rows per PostgreSQL
 * core of the INSERT from json_to_recordset (docs/performance.md, "Request-log writer: insert methods"), is all or
 * nothing but has no ON CONFLICT: a batch holding a row already written fails whole with a unique violation, and
 * then goes again as the INSERT that skips the rows already there. Each statement commits on its own, so `client`
 * must not be in a transaction; `timeoutMs` abandons a statement whose answer takes longer (as query_timeout).
 */
export async function insertBatch(client: pg.ClientBase, rows: readonly string[], timeoutMs?: number): Promise<void> {
  try {
    const copy = Object.assign(copyFrom(COPY_ROWS), { query_timeout: timeoutMs });
    await pipeline(Readable.from([copyTextRows(rows)]), client.query(copy));
  } catch (err) {
    if (faultCode(err) !== UNIQUE_VIOLATION) throw err;
    const insert: TimedQuery = { name: "request_logs_insert", text: INSERT_ROWS, values: [batchParameter(rows)], query_timeout: timeoutMs };
    await client.query(insert);
  }
}
