import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";

// What a newcomer meets first (docs/api.md, "Routes"): GET / answers an index; a trailing slash names the same
// route; and the models' `created` is when the model first appeared, stored, so the same after a restart.

const manifest = JSON.parse(readFileSync("package.json", "utf8")) as { name: string; version: string };

describe("GET / and trailing slashes", () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    gw = await startTestGateway();
    const user = await gw.services.auth.users.create({ email: "slash@example.test", password: "password-123" });
    key = (await gw.services.auth.apiKeys.create({ user: user.id })).key;
  });
  afterAll(() => gw?.close());

  it("GET / answers the index without a credential", async () => {
    const res = await fetch(`${gw.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    expect(await res.json()).toEqual({
      name: manifest.name,
      version: manifest.version,
      links: { openapi: "/openapi.json", healthz: "/healthz", readyz: "/readyz", models: "/v1/models", docs: "docs/api.md" },
    });
  });

  it("every link of the index that needs no credential answers", async () => {
    const { links } = (await (await fetch(`${gw.url}/`)).json()) as { links: Record<string, string> };
    for (const link of [links.openapi!, links.healthz!, links.readyz!]) expect((await fetch(`${gw.url}${link}`)).status, link).toBe(200);
  });

  it("a trailing slash is the same route", async () => {
    const headers = { authorization: `Bearer ${key}` };
    const plain = await fetch(`${gw.url}/v1/models`, { headers });
    const slashed = await fetch(`${gw.url}/v1/models/`, { headers });
    expect(slashed.status).toBe(200);
    expect(await slashed.json()).toEqual(await plain.json());
    expect((await fetch(`${gw.url}/healthz/`)).status).toBe(200);
    expect((await fetch(`${gw.url}/v1/models/m1/`, { headers })).status).toBe(200);
    // Still 401 before anything else on /v1, and 405 for a served path under another method.
    expect((await fetch(`${gw.url}/v1/models/`)).status).toBe(401);
    const wrongMethod = await fetch(`${gw.url}/healthz/`, { method: "POST" });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toContain("GET");
  });
});

describe("the models' created", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  let starts = 0;
  async function createdOf(models: string[]): Promise<Record<string, number>> {
    const gw = await startTestGateway({
      db,
      config: { models: Object.fromEntries(models.map((id) => [id, { kind: "chat", upstream: id, targets: ["main"] }])) },
    });
    try {
      const user = await gw.services.auth.users.create({ email: `created-${++starts}@example.test`, password: "password-123" });
      const { key } = await gw.services.auth.apiKeys.create({ user: user.id });
      const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      const list = (await res.json()) as { data: { id: string; created: number }[] };
      return Object.fromEntries(list.data.map((m) => [m.id, m.created]));
    } finally {
      await gw.close();
    }
  }

  it("is when the model first appeared, stored, and the same after a restart", async () => {
    await db.pool.query("insert into catalog_models (model_id, first_seen_at) values ('old', '2021-06-01T12:00:00Z')");
    const first = await createdOf(["old", "new"]);
    expect(first.old).toBe(Date.parse("2021-06-01T12:00:00Z") / 1000);
    const { rows } = await db.pool.query<{ first_seen_at: Date }>("select first_seen_at from catalog_models where model_id = 'new'");
    expect(first.new).toBe(Math.floor(rows[0]!.first_seen_at.getTime() / 1000));
    // A restart with one more model: the known ones keep their date, the newcomer is recorded once.
    const second = await createdOf(["old", "new", "newer"]);
    expect(second.old).toBe(first.old);
    expect(second.new).toBe(first.new);
    expect((await db.pool.query("select * from catalog_models")).rowCount).toBe(3);
  });
});
