import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { createLogger } from "../../src/logger.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { countLogWrites, quiesce, rowsOf, settled as settledOnce } from "../helpers/metering-checks.js";

// GET /embed/image:{model} and POST /v1/embed/tokens over real HTTP, a real database and the mock upstream: raw
// bytes typed by what they are, billed once as a generation, identical requests of the same user answered from the
// shared cache (200 or 304) without a charge, tokens for pages that cannot send headers, nothing private in logs,
// the cache's byte cap, and two gateways on one database generating an image once.

const PASSWORD = "password-123";
const PNG = "image/png";

let mock: MockUpstream;
let proxy: FaultProxy;
let db: TestDatabase;
let gw: TestGateway;
let users = 0;
const logLines: string[] = [];

const imageModel = (provider: string) => ({ kind: "image" as const, upstream: "gpt-image-1", targets: [provider], token_multiplier: 2 });

function config(cache: Record<string, number> = {}) {
  return {
    providers: {
      plain: { protocol: "openai" as const, base_url: proxy.baseUrl() },
      slow: { protocol: "openai" as const, base_url: proxy.baseUrl({ "x-mock-delay-ms": 400 }) },
      broken: { protocol: "openai" as const, base_url: proxy.baseUrl({ "x-mock-image": "not-image" }) },
    },
    models: {
      img: imageModel("plain"),
      other: imageModel("plain"),
      slow: imageModel("slow"),
      broken: imageModel("broken"),
      chat: { kind: "chat" as const, upstream: "m", targets: ["plain"] },
    },
    media: { download: { allow_private: ["127.0.0.1"] }, embed: cache },
    plans: { basic: { daily_tokens: 10_000_000, context_limit: 100_000 } },
    default_plan: "basic",
  };
}

beforeAll(async () => {
  mock = await startMockUpstream();
  proxy = await startFaultProxy(mock.url);
  db = await createTestDatabase();
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  gw = await startTestGateway({ db, logger: createLogger("debug", sink), config: config() });
  countLogWrites(gw);
});

afterAll(async () => {
  await gw?.close();
  await db?.drop();
  await proxy?.close();
  await mock?.close();
});

async function freshUser(on: TestGateway = gw) {
  const email = `embed-${++users}@example.test`;
  const user = await on.services.auth.users.create({ email, password: PASSWORD });
  const created = await on.services.auth.apiKeys.create({ user: email });
  return { id: user.id, key: created.key, keyId: created.id };
}

const settled = (userId: string, requests = 1) => settledOnce([gw], userId, requests);

const embedUrl = (model: string, query: Record<string, string>, base = gw.url) =>
  `${base}/embed/image:${model}?${new URLSearchParams(query).toString()}`;

/** With the key in a header, as a server-side or fetch client sends it. */
const withKey = (key: string, url: string, headers: Record<string, string> = {}) =>
  fetch(url, { headers: Object.assign({ authorization: `Bearer ${key}` }, headers) });

async function mint(key: string, body: Record<string, unknown>) {
  const res = await fetch(`${gw.url}/v1/embed/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { token: string; expires_at: string; url?: string; error?: unknown } };
}

const generationsSeen = () => proxy.requests.filter((r) => r.path.endsWith("/images/generations")).length;

describe("GET /embed/image:{model}", () => {
  it("answers the image's bytes typed by them, with ETag, a private max-age and a cross-origin policy; billed once", async () => {
    const user = await freshUser();
    const res = await withKey(user.key, embedUrl("img", { prompt: "a red kite", format: "webp" }));
    expect(res.status).toBe(200);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.equals(MOCK_IMAGES.webp)).toBe(true);
    expect(res.headers.get("content-type")).toBe("image/webp");
    expect(res.headers.get("etag")).toMatch(/^"[0-9a-f]{32}"$/);
    expect(res.headers.get("cache-control")).toBe("private, max-age=86400");
    expect(res.headers.get("cross-origin-resource-policy")).toBe("cross-origin");
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    const s = await settled(user.id);
    expect(s.hold.status).toBe("posted");
    expect(BigInt(s.log.quota_charged as string)).toBeGreaterThan(0n);
    expect(s.log).toMatchObject({ status: 200, route: "/embed/image:{model}", public_model: "img", usage_source: "upstream" });
  });

  it("an identical request is served from the cache without a charge (logged with 0), If-None-Match gives 304; another prompt pays", async () => {
    const user = await freshUser();
    const url = embedUrl("img", { prompt: "a blue boat", format: "png" });
    const first = await withKey(user.key, url);
    expect(first.status).toBe(200);
    const etag = first.headers.get("etag")!;
    await first.arrayBuffer();
    const before = generationsSeen();

    const second = await withKey(user.key, url);
    expect(second.status).toBe(200);
    expect(second.headers.get("etag")).toBe(etag);
    expect(second.headers.get("content-type")).toBe(PNG);
    expect(Buffer.from(await second.arrayBuffer()).equals(MOCK_IMAGES.png)).toBe(true);

    const revalidated = await withKey(user.key, url, { "if-none-match": `W/"nope", ${etag}` });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers.get("etag")).toBe(etag);
    expect(await revalidated.text()).toBe("");
    expect(generationsSeen()).toBe(before);

    const s = await settled(user.id);
    const served = s.logs.filter((l) => l.request_id !== s.log.request_id);
    expect(served.map((l) => [l.status, l.quota_charged, l.usage_source]).sort()).toEqual([
      [200, "0", "none"],
      [304, "0", "none"],
    ]);

    const other = await withKey(user.key, embedUrl("img", { prompt: "a green boat", format: "png" }));
    expect(other.status).toBe(200);
    await other.arrayBuffer();
    expect(generationsSeen()).toBe(before + 1);
    const after = await settled(user.id, 2);
    expect(after.holds.filter((h) => h.status === "posted")).toHaveLength(2);
  });

  it("another user's identical request is not served from the first user's entry", async () => {
    const [a, b] = [await freshUser(), await freshUser()];
    const url = embedUrl("img", { prompt: "the same lighthouse" });
    const first = await withKey(a.key, url);
    const etag = first.headers.get("etag")!;
    await first.arrayBuffer();
    const before = generationsSeen();
    const res = await withKey(b.key, url, { "if-none-match": etag });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(generationsSeen()).toBe(before + 1);
    expect((await settled(b.id)).hold.status).toBe("posted");
  });

  it.each([
    [{}, "prompt"],
    [{ prompt: "" }, "prompt"],
    [{ prompt: "x".repeat(2001) }, "prompt"],
    [{ prompt: "a cat", format: "gif" }, "format"],
    [{ prompt: "a cat", size: "big" }, "size"],
    [{ prompt: "a cat", size: "1024x1024", aspect_ratio: "16:9" }, "aspect_ratio"],
    [{ prompt: "a cat", aspect_ratio: "wide" }, "aspect_ratio"],
    [{ prompt: "a cat", v: "2" }, null],
  ])("refuses %j with 400 naming %s, the values never echoed", async (query, param) => {
    const user = await freshUser();
    const res = await withKey(user.key, embedUrl("img", query as Record<string, string>));
    const text = await res.text();
    expect(res.status).toBe(400);
    const body = JSON.parse(text) as { error: { code: string; param: string | null } };
    expect(body.error).toMatchObject({ code: "invalid_value", param });
    expect(text).not.toContain("a cat");
    expect(text).not.toContain("xxxx");
  });

  it("refuses a parameter given twice, an unknown model, a model of another kind and no credential", async () => {
    const user = await freshUser();
    const twice = await withKey(user.key, `${gw.url}/embed/image:img?prompt=a&prompt=b`);
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { error: { param: string } }).error.param).toBe("prompt");
    expect((await withKey(user.key, embedUrl("nope", { prompt: "a" }))).status).toBe(404);
    expect((await withKey(user.key, embedUrl("chat", { prompt: "a" }))).status).toBe(400);
    expect((await fetch(embedUrl("img", { prompt: "a" }))).status).toBe(401);
  });

  it("an image the upstream botched is a 502, not cached and not charged; the next identical request generates again", async () => {
    const user = await freshUser();
    const url = embedUrl("broken", { prompt: "a broken vase" });
    const res = await withKey(user.key, url);
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("upstream_invalid_output");
    const s = await settled(user.id);
    expect(s.hold.status).toBe("voided");
    expect(await rowsOf(db.pool, "select 1 from media_cache where user_id = $1", [user.id])).toEqual([]);
    expect((await withKey(user.key, url)).status).toBe(502);
  });
});

describe("embed tokens", () => {
  it("a page-like client (no header) loads the image with a minted token; the token never reaches a log line or a request-log row", async () => {
    const user = await freshUser();
    const prompt = "a secret garden at midnight";
    const minted = await mint(user.key, { model: "img" });
    expect(minted.status).toBe(201);
    expect(minted.body.url).toBeUndefined();
    expect(Date.parse(minted.body.expires_at) - Date.now()).toBeGreaterThan(3_500_000);
    expect(Date.parse(minted.body.expires_at) - Date.now()).toBeLessThanOrEqual(3_600_000);
    const res = await fetch(embedUrl("img", { prompt, token: minted.body.token }));
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(MOCK_IMAGES.png)).toBe(true);
    const bad = await fetch(embedUrl("img", { prompt, token: minted.body.token, format: "gif" }));
    const badText = await bad.text();
    expect(bad.status).toBe(400);
    expect(badText).not.toContain(minted.body.token);
    expect(badText).not.toContain(prompt);

    await settled(user.id);
    await quiesce(gw);
    const rows = await rowsOf(db.pool, "select r::text as row from request_logs r where user_id = $1", [user.id]);
    expect(rows.length).toBeGreaterThanOrEqual(2);
    const secrets = [minted.body.token, prompt, user.key, encodeURIComponent(prompt), "secret garden"];
    for (const secret of secrets) {
      expect(rows.filter((r) => (r.row as string).includes(secret))).toEqual([]);
      expect(logLines.filter((l) => l.includes(secret))).toEqual([]);
    }
    // The access log did see these requests, by route pattern only.
    expect(logLines.some((l) => l.includes(res.headers.get("x-request-id")!) && l.includes("/embed/:target"))).toBe(true);
  });

  it("a token bound to one image serves that image only, from the url it came with", async () => {
    const user = await freshUser();
    const minted = await mint(user.key, { model: "img", prompt: "a yellow tram", format: "jpeg", ttl_seconds: 60 });
    expect(minted.status).toBe(201);
    expect(minted.body.url).toMatch(/^\/embed\/image:img\?prompt=a\+yellow\+tram&format=jpeg&token=/);
    const res = await fetch(`${gw.url}${minted.body.url!}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    await res.arrayBuffer();
    const other = await fetch(embedUrl("img", { prompt: "a red tram", format: "jpeg", token: minted.body.token }));
    expect(other.status).toBe(403);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe("permission_denied");
  });

  it("refuses a token for another model (403), a tampered, expired or revoked one (401) and a raw key in the URL (401)", async () => {
    const user = await freshUser();
    const { token } = (await mint(user.key, { model: "img" })).body;
    const forOther = await fetch(embedUrl("other", { prompt: "a", token }));
    expect(forOther.status).toBe(403);

    const [head, payload, signature] = token.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify(Object.assign(claims, { model: "other" }))).toString("base64url");
    const flipped = signature.slice(0, -2) + (signature.endsWith("AA") ? "BB" : "AA");
    for (const bad of [`${head}.${forged}.${signature}`, `${head}.${payload}.${flipped}`, "not-a-token"]) {
      const res = await fetch(embedUrl("img", { prompt: "a", token: bad }));
      expect(res.status).toBe(401);
      expect(await res.text()).not.toContain(bad);
    }

    const expired = await gw.services.auth.embedTokens.mint(user.keyId, { model: "img", params: null }, new Date(Date.now() - 1000));
    expect((await fetch(embedUrl("img", { prompt: "a", token: expired.token }))).status).toBe(401);

    expect((await fetch(embedUrl("img", { prompt: "a", token: user.key }))).status).toBe(401);
    expect((await fetch(embedUrl("img", { prompt: "a", key: user.key }))).status).toBe(401);

    await gw.services.auth.apiKeys.revoke(user.keyId);
    expect((await fetch(embedUrl("img", { prompt: "a", token }))).status).toBe(401);
  });

  it("minting checks its body and the key's access to the model", async () => {
    const user = await freshUser();
    expect((await mint(user.key, { model: "img", ttl_seconds: 86_401 })).status).toBe(400);
    expect((await mint(user.key, { model: "img", format: "png" })).status).toBe(400);
    expect((await mint(user.key, { model: "chat" })).status).toBe(400);
    expect((await mint(user.key, { model: "nope" })).status).toBe(404);
    expect((await mint(user.key, { model: "img", extra: 1 })).status).toBe(400);
  });
});

describe("the cache's bounds and concurrency", () => {
  it("never holds more than cache_max_bytes: the least recently used entry goes first", async () => {
    const size = MOCK_IMAGES.png.length;
    const small = await startTestGateway({ db, config: config({ cache_max_bytes: size * 2 + Math.floor(size / 2) }) });
    try {
      const user = await freshUser(small);
      const get = async (prompt: string) => {
        const res = await withKey(user.key, embedUrl("img", { prompt, format: "png" }, small.url));
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      };
      await get("one");
      await get("two");
      await get("one"); // "two" is now the least recently used
      const before = generationsSeen();
      await get("three");
      const total = await rowsOf(
        db.pool,
        "select coalesce(sum(size_bytes), 0)::int as n, count(*)::int as c from media_cache where user_id = $1",
        [user.id],
      );
      expect(total[0]).toEqual({ n: size * 2, c: 2 });
      await get("one");
      expect(generationsSeen()).toBe(before + 1);
      await get("two");
      expect(generationsSeen()).toBe(before + 2);
      await quiesce(small);
      const holds = await rowsOf(
        db.pool,
        "select h.status from quota_holds h join quota_accounts a on a.id = h.account_id where a.user_id = $1",
        [user.id],
      );
      expect(holds).toHaveLength(4);
    } finally {
      await small.close();
    }
  });

  it("identical requests at once on two gateways sharing the database generate and charge once", async () => {
    const second = await startTestGateway({ db, config: config() });
    countLogWrites(second);
    try {
      const user = await freshUser();
      const url = (base: string) => embedUrl("slow", { prompt: "a crowd at once" }, base);
      const before = generationsSeen();
      const answers = await Promise.all([gw.url, second.url, gw.url, second.url].map((base) => withKey(user.key, url(base))));
      const bodies = await Promise.all(answers.map(async (r) => Buffer.from(await r.arrayBuffer())));
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      for (const body of bodies) expect(body.equals(MOCK_IMAGES.png)).toBe(true);
      expect(new Set(answers.map((r) => r.headers.get("etag"))).size).toBe(1);
      expect(generationsSeen()).toBe(before + 1);
      await quiesce(second);
      const s = await settledOnce([gw, second], user.id);
      expect(s.hold.status).toBe("posted");
      expect(s.logs.filter((l) => l.quota_charged === "0" && l.status === 200)).toHaveLength(3);
    } finally {
      await second.close();
    }
  });
});
