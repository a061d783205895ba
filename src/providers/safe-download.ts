import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { Agent, type Dispatcher } from "undici";
import type { MediaDownloadConfig } from "../config/schema.js";
import { createAddressPolicy, normaliseAddress, type AddressPolicy } from "./address-policy.js";

// Fetches a URL an upstream answered with (an image provider's result), which the gateway must treat as hostile:
// it could point at the metadata service, the database, anything on the gateway's network. Every hop (redirects
// are followed here, one at a time) is checked for its scheme and for the addresses it reaches, after DNS.
//
// The check sits in the connection itself: the undici Agent's `connect.lookup` resolves the host, refuses it if any
// address is not allowed, and hands net.connect only the addresses it checked, so a second resolution (DNS
// rebinding) can never pick another. Connecting by hostname this way keeps the Host header, TLS SNI and certificate
// checks as for any request. An IP literal is never looked up by net.connect, so it is checked before the request.

export type SafeDownloadReason =
  "url" | "scheme" | "dns" | "private_address" | "connect" | "status" | "redirects" | "too_large" | "timeout" | "aborted";

/** A refused or failed download. Its message names no URL (signed URLs carry secrets) and no upstream text. */
export class SafeDownloadError extends Error {
  readonly reason: SafeDownloadReason;
  /** The upstream's HTTP status, for `status`. */
  readonly status: number | null;

  constructor(reason: SafeDownloadReason, detail: string, status: number | null = null) {
    super(`media download refused (${reason}): ${detail}`);
    this.name = "SafeDownloadError";
    this.reason = reason;
    this.status = status;
  }
}

/** Every address of a hostname (rejects, or answers none, when it has none). */
export type HostLookup = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export type SafeDownloadOptions = MediaDownloadConfig & {
  /** Tests resolve names of their own; the default is the system resolver (dns.lookup, as net.connect uses). */
  lookup?: HostLookup;
};

export interface Download {
  bytes: Buffer;
  /** The answer's Content-Type as sent, unchecked. */
  contentType: string | null;
}

/** A download's body handed over as it arrives. */
export interface DownloadStream {
  /** The answer's Content-Type as sent, unchecked. */
  contentType: string | null;
  /**
   * The body's chunks, under the same cap and deadline: a failure is thrown from the loop as a SafeDownloadError.
   * Leaving the loop early closes the connection, and nothing more is read.
   */
  chunks: AsyncIterable<Buffer>;
}

export interface SafeDownloader {
  /** The whole body, read under max_bytes. */
  (url: string, signal?: AbortSignal): Promise<Download>;
  /**
   * The same download with its body handed over as it arrives (image delivery encodes it as it comes; the video
   * content route streams it to the client).
   */
  stream(url: string, signal?: AbortSignal): Promise<DownloadStream>;
}

const systemLookup: HostLookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * The lookup net.connect calls: it resolves, refuses the host if any one address is not allowed (a name that
 * mixes public and private addresses is a rebinding attempt, not an upstream to trust halfway), and answers
 * with the normalised addresses it checked.
 */
function checkedLookup(policy: AddressPolicy, resolve: HostLookup): LookupFunction {
  async function checked(hostname: string): Promise<LookupAddress[]> {
    const resolved = await resolve(hostname).catch(() => []);
    if (resolved.length === 0) throw new SafeDownloadError("dns", "the host did not resolve");
    return resolved.map(({ address }) => {
      const normal = normaliseAddress(address);
      if (!normal || !policy.permits(hostname, normal.address)) {
        throw new SafeDownloadError("private_address", "the host has an address that is not public");
      }
      return { address: normal.address, family: normal.family === "ipv4" ? 4 : 6 };
    });
  }
  return (hostname, options, callback) => {
    checked(hostname).then(
      (addresses) => (options.all ? callback(null, addresses) : callback(null, addresses[0]!.address, addresses[0]!.family)),
      (err: Error) => callback(err, ""),
    );
  };
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** The URL of one hop, `base` the hop that redirected to it. */
function hopUrl(text: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    throw new SafeDownloadError("url", "not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new SafeDownloadError("scheme", "only http and https URLs are fetched");
  return url;
}

/** An IP literal is checked here, before any connection: net.connect does not look it up. */
function checkLiteral(url: URL, policy: AddressPolicy): void {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host) !== 0 && !policy.permits(host, host)) throw new SafeDownloadError("private_address", "the address is not public");
}

const ignore = () => {};

/** Destroying an undici body aborts its request: the connection closes and nothing more is read. */
function discard(body: Dispatcher.ResponseData["body"]): void {
  body.on("error", ignore);
  body.destroy();
}

export function createSafeDownloader(options: SafeDownloadOptions): SafeDownloader {
  const policy = createAddressPolicy(options.allow_private);
  const agent = new Agent({ connect: { lookup: checkedLookup(policy, options.lookup ?? systemLookup) } });
  const { max_bytes: maxBytes, max_redirects: maxRedirects, timeout_ms: timeoutMs } = options;

  /** What an undici failure means here; its own error (which names hosts) is not kept. */
  function classify(err: unknown, deadline: AbortSignal, signal: AbortSignal | undefined): SafeDownloadError {
    if (err instanceof SafeDownloadError) return err;
    if (err instanceof Error && err.cause instanceof SafeDownloadError) return err.cause;
    if (signal?.aborted) return new SafeDownloadError("aborted", "the caller gave up");
    if (deadline.aborted) return new SafeDownloadError("timeout", `not done within ${timeoutMs} ms`);
    return new SafeDownloadError("connect", "the upstream could not be reached");
  }

  /** The body's chunks, as long as they add up to at most max_bytes; a failure reading them is classified as above. */
  async function* capped(res: Dispatcher.ResponseData, deadline: AbortSignal, signal: AbortSignal | undefined): AsyncGenerator<Buffer> {
    let length = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        length += chunk.length;
        // Leaving the loop destroys the body: the rest is never read.
        if (length > maxBytes) throw new SafeDownloadError("too_large", `more than ${maxBytes} bytes`);
        yield chunk;
      }
    } catch (err) {
      throw classify(err, deadline, signal);
    }
  }

  async function stream(url: string, signal?: AbortSignal): Promise<DownloadStream> {
    const deadline = AbortSignal.timeout(timeoutMs);
    const aborted = signal ? AbortSignal.any([signal, deadline]) : deadline;
    let hop = hopUrl(url);
    for (let redirects = 0; ; redirects++) {
      checkLiteral(hop, policy);
      try {
        const res = await agent.request({ origin: hop.origin, path: hop.pathname + hop.search, method: "GET", signal: aborted });
        if (REDIRECTS.has(res.statusCode)) {
          discard(res.body);
          if (redirects >= maxRedirects) throw new SafeDownloadError("redirects", `more than ${maxRedirects} redirects`);
          const location = res.headers.location;
          if (typeof location !== "string") throw new SafeDownloadError("status", "a redirect without a Location", res.statusCode);
          hop = hopUrl(location, hop);
          continue;
        }
        if (res.statusCode < 200 || res.statusCode >= 300) {
          discard(res.body);
          throw new SafeDownloadError("status", `the upstream answered ${res.statusCode}`, res.statusCode);
        }
        // A declared length over the cap is refused before a byte of the body is read.
        const declared = res.headers["content-length"];
        if (typeof declared === "string" && Number(declared) > maxBytes) {
          discard(res.body);
          throw new SafeDownloadError("too_large", `more than ${maxBytes} bytes`);
        }
        const contentType = res.headers["content-type"];
        return { contentType: typeof contentType === "string" ? contentType : null, chunks: capped(res, deadline, signal) };
      } catch (err) {
        throw classify(err, deadline, signal);
      }
    }
  }

  async function whole(url: string, signal?: AbortSignal): Promise<Download> {
    const { contentType, chunks } = await stream(url, signal);
    const parts: Buffer[] = [];
    let length = 0;
    for await (const chunk of chunks) {
      parts.push(chunk);
      length += chunk.length;
    }
    return { bytes: Buffer.concat(parts, length), contentType };
  }

  return Object.assign(whole, { stream });
}
