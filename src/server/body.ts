import type { IncomingMessage } from "node:http";
import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import { GatewayError, errors } from "../errors.js";
import type { AppEnv } from "./context.js";
import type { BodyReservation } from "./body-budget.js";
import type { BodyRules } from "./body-rules.js";
import { sendContinue } from "./expect-continue.js";
import { requestHeader } from "./headers.js";
import { closeAfterAnswer, type LingerBounds } from "./lingering-close.js";
import { INVALID_TEXT_MESSAGE, firstInvalidText } from "@model-gateway/worker-kit/wire/text";

// Bodies are read straight from Node's incoming stream (docs/architecture.md, "Rules": no WHATWG Request body per call) and the
// size cap is enforced while reading, so an oversize body is refused before it is buffered or parsed.

export function bodyRules(rules: BodyRules): MiddlewareHandler<AppEnv> {
  return async function bodyRules(c, next) {
    c.set("bodyRules", rules);
    await next();
  };
}

/**
 * A body cut for its slowness: the client is stalled or dripping, so the rest of it is not waited for long
 * (the answer still gets its chance to arrive before the close).
 */
const SLOW_BODY_LINGER: LingerBounds = { totalMs: 1000, idleMs: 1000, maxBytes: 64 * 1024 };

const tooSlow = (rules: BodyRules) =>
  new GatewayError({
    code: "request_timeout",
    message:
      rules.minBytesPerSecond > 0
        ? `The request body did not arrive in time: it must end within ${rules.timeoutMs} ms and arrive at ${rules.minBytesPerSecond} bytes per second or more.`
        : `The request body did not arrive in time: it must end within ${rules.timeoutMs} ms.`,
  });

/**
 * Where a body's chunks go as they are read; a refusal returned stops the reading and is what the read throws
 * (the client may still be sending, so its answer closes the connection).
 */
export type BodySink = (chunk: Buffer) => GatewayError | undefined;

async function readCapped(c: Context<AppEnv>, limit: number, reservation?: BodyReservation): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  await streamCapped(c, limit, reservation, (chunk) => {
    chunks.push(chunk);
    size += chunk.length;
    return undefined;
  });
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

/**
 * Hands a body to `sink` chunk by chunk under the cap and the reservation (413, 503), and resolves once it has
 * ended; a client gone mid-body is `clientClosed`.
 */
export async function streamCapped(
  c: Context<AppEnv>,
  limit: number,
  reservation: BodyReservation | undefined,
  sink: BodySink,
): Promise<void> {
  const declared = Number(requestHeader(c, "content-length"));
  const known = Number.isFinite(declared);
  if (known && declared > limit) throw refused(c, errors.payloadTooLarge(limit));
  // With a Content-Length the whole body is reserved before a byte is read; without, chunk by chunk.
  if (reservation && known && !reservation.take(declared)) throw refused(c, overBudget());
  const incoming = c.env?.incoming;
  if (!incoming) {
    // In-process calls (app.request) have no Node stream; the same cap applies.
    const buf = Buffer.from(await c.req.raw.arrayBuffer());
    if (buf.length > limit) throw errors.payloadTooLarge(limit);
    if (reservation && !known && !reservation.take(buf.length)) throw overBudget();
    const refusal = sink(buf);
    if (refusal) throw refusal;
    return;
  }
  sendContinue(incoming, c.env.outgoing, requestHeader(c, "expect"));
  return readIncoming(c, incoming, limit, known ? undefined : reservation, sink);
}

/** Event listeners rather than `for await`, which builds an async iterator and a promise per chunk. */
function readIncoming(
  c: Context<AppEnv>,
  incoming: IncomingMessage,
  limit: number,
  reservation: BodyReservation | undefined,
  sink: BodySink,
): Promise<void> {
  const rules = c.get("bodyRules");
  return new Promise((resolve, reject) => {
    let size = 0;
    let timer: NodeJS.Timeout | undefined;
    const done = (err: GatewayError | null) => {
      clearTimeout(timer);
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onError);
      incoming.off("close", onClose);
      if (err) reject(err);
      else resolve();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      const refusal =
        size > limit ? errors.payloadTooLarge(limit) : reservation && !reservation.take(chunk.length) ? overBudget() : sink(chunk);
      if (refusal) done(refused(c, refusal));
    };
    const onEnd = () => done(null);
    // The stream only fails or closes early when the connection does: the client left while sending its body.
    const onError = () => done(errors.clientClosed());
    const onClose = () => {
      if (!incoming.complete) done(errors.clientClosed());
    };
    if (incoming.readableEnded || incoming.destroyed) {
      done(incoming.readableEnded ? null : errors.clientClosed());
      return;
    }
    if (rules) {
      // One timer, set for the next moment either bound could be passed rather than refreshed per chunk.
      const started = performance.now();
      const check = () => {
        const elapsed = performance.now() - started;
        const slow = elapsed >= rules.graceMs && size < (rules.minBytesPerSecond * elapsed) / 1000;
        if (elapsed >= rules.timeoutMs || slow) {
          done(refused(c, tooSlow(rules), SLOW_BODY_LINGER));
          return;
        }
        const rateDue = rules.minBytesPerSecond > 0 ? Math.max(rules.graceMs, (size * 1000) / rules.minBytesPerSecond) : Infinity;
        timer = setTimeout(check, Math.max(1, Math.min(rules.timeoutMs, rateDue) - elapsed));
      };
      timer = setTimeout(check, rules.minBytesPerSecond > 0 ? Math.min(rules.timeoutMs, rules.graceMs) : rules.timeoutMs);
    }
    incoming.on("data", onData);
    incoming.on("end", onEnd);
    incoming.on("error", onError);
    incoming.on("close", onClose);
  });
}

/**
 * A refusal of a body the client may still be sending: its answer closes the connection, which reads and
 * discards the rest first (src/server/lingering-close.ts), so that the client can read the answer.
 */
export function refused(c: Context<AppEnv>, err: GatewayError, bounds?: LingerBounds): GatewayError {
  const incoming = c.env?.incoming;
  if (incoming) closeAfterAnswer(incoming, c.env.outgoing, bounds);
  return err;
}

const overBudget = () =>
  new GatewayError({
    message: "The gateway is reading as many large request bodies as it can hold right now; retry shortly with backoff.",
    code: "body_budget_exhausted",
    headers: { "Retry-After": "1" },
  });

export function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const mime = contentType.split(";")[0]!.trim().toLowerCase();
  return mime === "application/json" || mime.endsWith("+json");
}

/** A JSON body: its parse and its text. */
interface JsonBody {
  value: unknown;
  text: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether the quote at `at` is escaped: an odd run of backslashes before it. */
function escaped(text: string, at: number): boolean {
  let i = at - 1;
  while (i >= 0 && text.charCodeAt(i) === BACKSLASH) i--;
  return (at - 1 - i) % 2 === 1;
}

/**
 * Whether JSON text nests arrays and objects more than `max` deep (a top-level object is depth 1): one pass
 * over the text, strings skipped with indexOf. Malformed text may answer either way; its parse refuses it.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  // A depth of `max + 1` takes at least that many characters.
  if (text.length <= max) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === QUOTE) {
      let end = text.indexOf('"', i + 1);
      while (end !== -1 && escaped(text, end)) end = text.indexOf('"', end + 1);
      if (end === -1) return false;
      i = end;
    } else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > max) return true;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return false;
}

/**
 * Reads and parses a JSON body: 415 for another content type, 413 over the cap, 400 for malformed or too deeply
 * nested JSON; 503 when the body budget cannot hold it (the route's reservation, else one of its own from the
 * request's body rules, given back once the body is parsed).
 */
export async function readJsonBody(c: Context<AppEnv>, limit: number, reservation?: BodyReservation): Promise<JsonBody> {
  if (!isJson(requestHeader(c, "content-type"))) {
    throw refused(c, errors.unsupportedMediaType("Content-Type must be application/json."));
  }
  const rules = c.get("bodyRules");
  if (reservation || !rules) return parseJson(await readCapped(c, limit, reservation), rules);
  const own = rules.budget.reserve();
  try {
    return parseJson(await readCapped(c, limit, own), rules);
  } finally {
    own.release();
  }
}

function parseJson(buf: Buffer, rules: BodyRules | undefined): JsonBody {
  if (buf.length === 0) throw errors.badRequest("Request body is empty; a JSON object is required.", null, "invalid_json");
  const text = buf.toString("utf8");
  if (rules && nestsDeeperThan(text, rules.maxJsonDepth)) {
    throw errors.badRequest(
      `Request body nests JSON arrays and objects deeper than the limit of ${rules.maxJsonDepth} levels.`,
      null,
      "invalid_json",
    );
  }
  try {
    return { value: JSON.parse(text), text };
  } catch (err) {
    throw errors.badRequest(`Request body is not valid JSON: ${(err as Error).message}.`, null, "invalid_json");
  }
}

const readJson = async (c: Context<AppEnv>, limit: number): Promise<unknown> => (await readJsonBody(c, limit)).value;

/** `messages[0].role` style, as OpenAI reports `param`. */
function paramPath(path: readonly PropertyKey[]): string | null {
  if (path.length === 0) return null;
  return path.reduce<string>((acc, key) => {
    if (typeof key === "number") return `${acc}[${key}]`;
    return acc ? `${acc}.${String(key)}` : String(key);
  }, "");
}

/** Validates a parsed body; the first issue becomes a 400 (or `invalid`'s status) naming the failing field in `param`. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, invalid = errors.badRequest): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = paramPath(issue.path);
  throw invalid(param ? `Invalid ${param}: ${issue.message}` : issue.message, param, "invalid_value");
}

/**
 * Reads and validates the body of a route that stores what it takes (auth, admin, support, reseller): text that
 * PostgreSQL cannot store is refused first, naming the field, whatever the schema says of it (worker-kit/wire/text.ts),
 * except at the paths `scrubbed` matches, which the route cleans itself (the chat platform's message text).
 */
export async function readValidJson<S extends z.ZodType>(
  c: Context<AppEnv>,
  schema: S,
  limit: number,
  scrubbed?: RegExp,
): Promise<z.infer<S>> {
  const value = await readJson(c, limit);
  const invalid = firstInvalidText(value, scrubbed);
  if (invalid !== undefined) {
    throw errors.badRequest(`Invalid ${invalid || "body"}: ${INVALID_TEXT_MESSAGE}`, invalid || null, "invalid_value");
  }
  return validate(schema, value);
}
