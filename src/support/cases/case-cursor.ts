import { isUuid } from "../../ids.js";
import { errors } from "../../errors.js";

// The keyset cursor of the case lists (user and staff): PostgreSQL's own text of created_at (microseconds; a JS
// Date would truncate to milliseconds and skip or repeat rows) and the id, as opaque base64url JSON.

export interface CaseCursor {
  t: string;
  id: string;
}

const CURSOR_TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.\d{6}Z$/;

const invalid = () => errors.badRequest("Invalid cursor; pass the next_cursor of a previous page unchanged.", "cursor", "invalid_cursor");

export const encodeCaseCursor = (cursor: CaseCursor): string => Buffer.from(JSON.stringify(cursor)).toString("base64url");

export function decodeCaseCursor(value: string): CaseCursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(value, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  const { t, id } = (parsed ?? {}) as { t?: unknown; id?: unknown };
  if (typeof t !== "string" || typeof id !== "string" || !isUuid(id)) throw invalid();
  const seconds = CURSOR_TIME.exec(t)?.[1];
  const date = new Date(`${seconds}Z`);
  // The round trip refuses what the pattern lets through but PostgreSQL would not take (2025-02-30, year 0).
  if (!seconds || Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1 || date.toISOString().slice(0, 19) !== seconds) {
    throw invalid();
  }
  return { t, id };
}
