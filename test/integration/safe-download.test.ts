import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSafeDownloader, SafeDownloadError, type HostLookup, type SafeDownloadOptions } from "../../src/providers/safe-download.js";

// The media downloader against real HTTP servers on loopback: loopback is private, so every success needs the
// allow-list, and every refusal is proven to happen before a request reaches the server (it records each one).

const CAP = 64 * 1024;
const PNG = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), Buffer.alloc(1000, 7)]);

interface Upstream {
  port: number;
  /** Every request path (query included) the server saw. */
  seen: string[];
  /** Set once the response of a too-large body was closed by the client before the server finished. */
  cutOff: boolean;
  close(): Promise<void>;
}

async function startUpstream(): Promise<Upstream> {
  const upstream = { port: 0, seen: [] as string[], cutOff: false, close: async () => {} };
  const server = http.createServer((req, res) => {
    upstream.seen.push(req.url ?? "");
    const path = new URL(req.url ?? "/", "http://x").pathname;
    switch (path) {
      case "/image.png":
        res.writeHead(200, { "content-type": "image/png", "content-length": PNG.length });
        return res.end(PNG);
      case "/exactly-cap":
        return res.end(Buffer.alloc(CAP, 1));
      case "/declared-too-large":
        // Only the first bytes are sent: a client that read on would wait for the rest until its timeout.
        res.writeHead(200, { "content-type": "image/png", "content-length": CAP + 1 });
        return void res.write(Buffer.alloc(100));
      case "/chunked-too-large": {
        res.writeHead(200, { "content-type": "image/png" });
        res.on("close", () => (upstream.cutOff = !res.writableFinished));
        const chunk = Buffer.alloc(16 * 1024, 2);
        const pump = () => {
          // Without an end, only the client closing the connection stops this.
          while (!res.destroyed && res.write(chunk));
          if (!res.destroyed) res.once("drain", pump);
        };
        return pump();
      }
      case "/stall":
        return; // never answers
      case "/stall-body":
        res.writeHead(200, { "content-type": "image/png", "content-length": 1000 });
        return void res.write(Buffer.alloc(10));
      case "/missing":
        res.writeHead(404, { "content-type": "text/plain" });
        return res.end("upstream secret: internal bucket name");
      case "/loop":
        res.writeHead(302, { location: "/loop" });
        return res.end();
      case "/to-metadata":
        res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/iam/security-credentials/" });
        return res.end();
      case "/to-mapped":
        res.writeHead(301, { location: `http://[::ffff:7f00:1]:${upstream.port}/image.png` });
        return res.end();
      case "/to-evil":
        res.writeHead(307, { location: `http://evil.test:${upstream.port}/image.png` });
        return res.end();
      case "/to-file":
        res.writeHead(302, { location: "file:///etc/passwd" });
        return res.end();
      case "/to-image":
        res.writeHead(303, { location: "/image.png?sig=hop" });
        return res.end();
      default:
        res.writeHead(500);
        return res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  upstream.port = (server.address() as AddressInfo).port;
  upstream.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return upstream;
}

/** Names of these tests' own: the upstream is on 127.0.0.1 whatever the name. */
const names: Record<string, string[]> = {
  "allowed.test": ["127.0.0.1"],
  "evil.test": ["127.0.0.1"],
  "mapped.test": ["::ffff:127.0.0.1"],
  "mixed.test": ["93.184.216.34", "127.0.0.1"],
};
const lookup: HostLookup = async (hostname) => {
  const addresses = names[hostname];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
};

const settings = (overrides: Partial<SafeDownloadOptions> = {}): SafeDownloadOptions =>
  Object.assign({ max_bytes: CAP, timeout_ms: 2000, max_redirects: 3, allow_private: [] }, overrides);

/** The download's refusal; fails the test if it succeeded or failed otherwise. */
async function refusal(download: Promise<unknown>): Promise<SafeDownloadError> {
  const err = await download.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SafeDownloadError);
  return err as SafeDownloadError;
}

let upstream: Upstream;
beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(() => upstream.close());
beforeEach(() => {
  upstream.seen.length = 0;
  upstream.cutOff = false;
});

const at = (path: string, host = "127.0.0.1") => `http://${host}:${upstream.port}${path}`;

describe("allowed upstreams", () => {
  const download = createSafeDownloader(settings({ allow_private: ["127.0.0.1/32", "allowed.test"], lookup }));

  it("returns the bytes and the content type of an upstream on the allow-list (by CIDR)", async () => {
    const result = await download(at("/image.png?sig=s3cr3t"));
    expect(result.bytes.equals(PNG)).toBe(true);
    expect(result.contentType).toBe("image/png");
    expect(upstream.seen).toEqual(["/image.png?sig=s3cr3t"]);
  });

  it("returns the bytes of an upstream on the allow-list by hostname, resolved once: the connection uses what was checked", async () => {
    const resolved: string[] = [];
    const counting: HostLookup = (hostname) => (resolved.push(hostname), lookup(hostname));
    const download = createSafeDownloader(settings({ allow_private: ["allowed.test"], lookup: counting }));
    expect((await download(at("/image.png", "allowed.test"))).bytes.equals(PNG)).toBe(true);
    expect(resolved).toEqual(["allowed.test"]);
  });

  it("follows a redirect, and reads a body of exactly the cap", async () => {
    expect((await download(at("/to-image"))).bytes.equals(PNG)).toBe(true);
    expect(upstream.seen).toEqual(["/to-image", "/image.png?sig=hop"]);
    expect((await download(at("/exactly-cap"))).bytes.length).toBe(CAP);
  });
});

describe("refused addresses", () => {
  it("refuses the same server without the allow-list, before any request", async () => {
    const download = createSafeDownloader(settings({ lookup }));
    expect((await refusal(download(at("/image.png")))).reason).toBe("private_address");
    expect((await refusal(download(`http://[::ffff:127.0.0.1]:${upstream.port}/image.png`))).reason).toBe("private_address");
    expect(upstream.seen).toEqual([]);
  });

  it("refuses a hostname that resolves to 127.0.0.1, as IPv4 or IPv4-mapped IPv6", async () => {
    const download = createSafeDownloader(settings({ lookup }));
    expect((await refusal(download(at("/image.png", "evil.test")))).reason).toBe("private_address");
    expect((await refusal(download(at("/image.png", "mapped.test")))).reason).toBe("private_address");
    expect(upstream.seen).toEqual([]);
  });

  it("refuses a hostname with a public and a private address (none of them is used)", async () => {
    const download = createSafeDownloader(settings({ lookup }));
    expect((await refusal(download(at("/image.png", "mixed.test")))).reason).toBe("private_address");
    expect(upstream.seen).toEqual([]);
  });

  it("says dns for a name that does not resolve", async () => {
    const download = createSafeDownloader(settings({ lookup }));
    expect((await refusal(download(at("/image.png", "nowhere.test")))).reason).toBe("dns");
  });

  it("re-checks every redirect: to the metadata address, a mapped loopback, a name resolving to loopback", async () => {
    // The first hop is allowed by name; the hops are not, though they reach the same server.
    const download = createSafeDownloader(settings({ allow_private: ["allowed.test"], lookup }));
    for (const path of ["/to-metadata", "/to-mapped", "/to-evil"]) {
      expect((await refusal(download(at(path, "allowed.test")))).reason).toBe("private_address");
    }
    // Only the redirecting requests arrived: no hop was sent, to this server or any other.
    expect(upstream.seen).toEqual(["/to-metadata", "/to-mapped", "/to-evil"]);
  });
});

describe("refused URLs and answers", () => {
  const download = createSafeDownloader(settings({ allow_private: ["127.0.0.1"], lookup }));

  it.each(["file:///etc/passwd", "ftp://127.0.0.1/image.png", "data:image/png;base64,iVBORw0KGgo=", "gopher://127.0.0.1:70/"])(
    "refuses the scheme of %s",
    async (url) => {
      expect((await refusal(download(url))).reason).toBe("scheme");
    },
  );

  it("refuses a redirect to another scheme, and a URL that is none", async () => {
    expect((await refusal(download(at("/to-file")))).reason).toBe("scheme");
    expect((await refusal(download("not a url"))).reason).toBe("url");
  });

  it("stops a redirect loop after max_redirects", async () => {
    const err = await refusal(download(at("/loop")));
    expect(err.reason).toBe("redirects");
    expect(upstream.seen).toHaveLength(4);
  });

  it("refuses a declared Content-Length over the cap without reading the body", async () => {
    // Reading on would wait for bytes the server never sends, and end in a timeout instead.
    const download = createSafeDownloader(settings({ allow_private: ["127.0.0.1"], timeout_ms: 1000 }));
    expect((await refusal(download(at("/declared-too-large")))).reason).toBe("too_large");
  });

  it("stops reading a chunked body as soon as it passes the cap", async () => {
    expect((await refusal(download(at("/chunked-too-large")))).reason).toBe("too_large");
    await expect.poll(() => upstream.cutOff).toBe(true);
  });

  it("gives up on a server that stalls, before its headers or within its body", async () => {
    const download = createSafeDownloader(settings({ allow_private: ["127.0.0.1"], timeout_ms: 200 }));
    expect((await refusal(download(at("/stall")))).reason).toBe("timeout");
    expect((await refusal(download(at("/stall-body")))).reason).toBe("timeout");
  });

  it("says aborted when the caller gives up", async () => {
    const controller = new AbortController();
    const pending = download(at("/stall"), controller.signal);
    setTimeout(() => controller.abort(), 50);
    expect((await refusal(pending)).reason).toBe("aborted");
  });

  it("reports a non-2xx status without its body", async () => {
    const err = await refusal(download(at("/missing?sig=s3cr3t")));
    expect(err.reason).toBe("status");
    expect(err.status).toBe(404);
    expect(err.message).not.toMatch(/secret|bucket|s3cr3t|sig=/);
  });

  it("never puts the URL in an error", async () => {
    const secret = "X-Amz-Signature=deadbeef";
    for (const url of [at(`/missing?${secret}`), `http://169.254.169.254/?${secret}`, `ftp://x/?${secret}`, at(`/loop?${secret}`)]) {
      const err = await refusal(download(url));
      expect(`${err.message} ${err.stack}`).not.toContain("deadbeef");
      expect(err.cause).toBeUndefined();
    }
  });
});

describe("a download handed over as it arrives (stream)", () => {
  const download = createSafeDownloader(settings({ allow_private: ["127.0.0.1"], lookup, timeout_ms: 500 }));

  /** Every chunk of the download's body, or the SafeDownloadError its loop threw. */
  async function read(url: string): Promise<Buffer | SafeDownloadError> {
    try {
      const parts: Buffer[] = [];
      for await (const chunk of (await download.stream(url)).chunks) parts.push(chunk);
      return Buffer.concat(parts);
    } catch (err) {
      expect(err).toBeInstanceOf(SafeDownloadError);
      return err as SafeDownloadError;
    }
  }

  it("hands over the body and the content type, after the same checks as a whole download", async () => {
    const opened = await download.stream(at("/to-image"));
    expect(opened.contentType).toBe("image/png");
    const parts: Buffer[] = [];
    for await (const chunk of opened.chunks) parts.push(chunk);
    expect(Buffer.concat(parts).equals(PNG)).toBe(true);
    expect((await refusal(download.stream(at("/to-metadata")))).reason).toBe("private_address");
    expect((await refusal(download.stream(at("/declared-too-large")))).reason).toBe("too_large");
  });

  it("throws from the loop once the body passes the cap, and stops reading it", async () => {
    expect(((await read(at("/chunked-too-large"))) as SafeDownloadError).reason).toBe("too_large");
    await expect.poll(() => upstream.cutOff).toBe(true);
  });

  it("throws from the loop when the body stalls past the deadline", async () => {
    expect(((await read(at("/stall-body"))) as SafeDownloadError).reason).toBe("timeout");
  });
});
