import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { GatewayError } from "../../src/errors.js";
import { pricingGroupMultiplier } from "../../src/metering/pricing.js";
import { startTestGateway, testConfig, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";

// Issue 20, item 10: a pricing group's name is checked against a pattern in the config and in an admin's key
// alike, an unknown group is a 400 at key creation, and groups are looked up in a Map, so that `constructor`,
// `__proto__` or `hasOwnProperty` can never name one (every request of such a key answered 500).

const PASSWORD = "password-123";
const MEMBERS = ["constructor", "__proto__", "hasOwnProperty", "toString", "valueOf"];

let gw: TestGateway;
let admin: Record<string, string>;

beforeAll(async () => {
  gw = await startTestGateway({ config: { pricing_groups: { default: { multiplier: 1 }, "team-a.v2": { multiplier: 2 } } } });
  await gw.services.auth.users.create({ email: "u@example.test", password: PASSWORD });
  await gw.services.auth.users.create({ email: "a@example.test", password: PASSWORD, role: "admin" });
  const session = await logIn(gw.url, "a@example.test", PASSWORD);
  admin = Object.assign({ "content-type": "application/json" }, session.headers);
});

afterAll(() => gw?.close());

const createKey = (pricingGroup: string) =>
  fetch(`${gw.url}/api/v1/admin/keys`, {
    method: "POST",
    headers: admin,
    body: JSON.stringify({ user: "u@example.test", pricing_group: pricingGroup }),
  });

describe("pricing group names", () => {
  it.each(MEMBERS)("the admin API refuses the group %s with 400", async (name) => {
    const res = await createKey(name);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe("pricing_group");
  });

  it.each(MEMBERS)("the key service (the CLI's road) refuses the group %s", async (name) => {
    await expect(gw.services.auth.apiKeys.create({ user: "u@example.test", pricing_group: name })).rejects.toBeInstanceOf(GatewayError);
  });

  it("an unknown but well-formed group is a 400, a configured one is taken", async () => {
    expect((await createKey("nobody")).status).toBe(400);
    expect((await createKey("team-a.v2")).status).toBe(201);
  });

  it("a config group named __proto__ is never a group (zod drops the key)", () => {
    const groups = JSON.parse(`{"default": {"multiplier": 1}, "__proto__": {"multiplier": 2}}`) as Record<string, unknown>;
    const config = parseConfig({ pricing_groups: groups }, "test config");
    expect(Object.hasOwn(config.pricing_groups, "__proto__")).toBe(false);
    expect(pricingGroupMultiplier(config, "__proto__")).toBe(1);
  });

  it.each(["constructor", "hasOwnProperty", "Upper", "-dash", "a".repeat(65)])("the config refuses the group name %s", (name) => {
    const groups = JSON.parse(`{"default": {"multiplier": 1}, ${JSON.stringify(name)}: {"multiplier": 2}}`) as Record<string, unknown>;
    expect(() => parseConfig({ pricing_groups: groups }, "test config")).toThrow(/pricing_groups/);
  });

  it.each(MEMBERS)("a key already stored with the group %s is priced as the default group, not a 500", async (name) => {
    expect(pricingGroupMultiplier(testConfig(), name)).toBe(1);
    const { id, key } = await gw.services.auth.apiKeys.create({ user: "u@example.test" });
    await gw.db.pool.query("update api_keys set pricing_group = $1 where id = $2", [name, id]);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m1", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).not.toBe(500);
  });
});
