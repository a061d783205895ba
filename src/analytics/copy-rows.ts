// Encoded request-log rows (row-json.ts) as COPY data, for insert-batch.ts. The writer buffers a row as encodeRow's
// JSON (the ledger's journal and the outbox keep that shape too), so a batch is parsed back here, once per flush.

/** The table's columns in the order the COPY data carries them; each is its key in encodeRow's JSON. */
export const COLUMNS = [
  "request_id",
  "user_id",
  "key_id",
  "route",
  "client_protocol",
  "public_model",
  "upstream_model",
  "provider",
  "fallback_path",
  "status",
  "error_class",
  "error_code",
  "input_tokens",
  "output_tokens",
  "cached_tokens",
  "quota_charged",
  "usage_source",
  "latency_ms",
  "ttfb_ms",
  "streamed",
  "received_at",
  "created_at",
  "cost_usd",
  "upstream_cost_usd",
  "gpt_image_usage_fallback",
] as const;

type Value = string | number | boolean | null | string[];
type EncodedRow = Record<(typeof COLUMNS)[number], Value>;

const SPECIAL = /[\\\n\r\t]/;
const SPECIAL_ALL = /[\\\n\r\t]/g;
const ESCAPES: Record<string, string> = { "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** A field of COPY's text format: a backslash, newline, carriage return or tab would otherwise end or change it. */
const copyField = (value: string) => (SPECIAL.test(value) ? value.replace(SPECIAL_ALL, (c) => ESCAPES[c]!) : value);

/** An array literal with every element quoted: a comma, brace, quote, space or the word NULL stays an element. */
const arrayLiteral = (values: string[]) => `{${values.map((v) => `"${v.replace(/["\\]/g, "\\$&")}"`).join(",")}}`;

function textValue(value: Value): string {
  if (value === null) return "\\N";
  if (typeof value === "boolean") return value ? "t" : "f";
  if (typeof value === "number") return String(value);
  if (Array.isArray(value)) return copyField(arrayLiteral(value));
  return copyField(value);
}

/** The rows as COPY's text format: one line per row, a tab between fields, \N for NULL. */
export function copyTextRows(rows: readonly string[]): string {
  let out = "";
  for (const row of rows) {
    const r = JSON.parse(row) as EncodedRow;
    out += COLUMNS.map((c) => textValue(r[c])).join("\t") + "\n";
  }
  return out;
}
