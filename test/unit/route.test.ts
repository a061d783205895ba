import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { OperationDescription } from "../../src/openapi/operation.js";
import type { AppEnv } from "../../src/server/context.js";
import { mountRoutes, route, servedPattern } from "../../src/server/route.js";

const op = (method: OperationDescription["method"], path: string, extra: Partial<OperationDescription> = {}): OperationDescription =>
  Object.assign({ method, path, operationId: `${method}${path}`, summary: "s", tag: "Operations", access: "public" } as const, extra);

const table = (app: Hono<AppEnv>) => app.routes.map((r) => `${r.method} ${r.path}`);

describe("servedPattern", () => {
  it("turns the template's parameters into Hono's, with a parameter's own pattern where it has one", () => {
    expect(servedPattern(op("get", "/keys/{id}/revoke"))).toBe("/keys/:id/revoke");
    expect(servedPattern(op("get", "/v1/models/{model}", { paramPatterns: { model: ".+" } }))).toBe("/v1/models/:model{.+}");
    expect(servedPattern(op("post", "/m/{model}:run", { served: "/m/:target{.+}" }))).toBe("/m/:target{.+}");
  });
});

describe("mountRoutes", () => {
  it("adds each route at its operations' methods and paths, one handler made once per route", async () => {
    let made = 0;
    const twoPaths = route<{ word: string }>([op("post", "/a"), op("post", "/v1/a")], ({ word }) => {
      made += 1;
      return (c) => c.text(word);
    });
    const app = new Hono<AppEnv>();
    mountRoutes(app, [twoPaths], { word: "hi" });
    expect(made).toBe(1);
    expect(table(app)).toEqual(["POST /a", "POST /v1/a"]);
    expect(await (await app.request("/v1/a", { method: "POST" })).text()).toBe("hi");
  });

  it("adds one pattern once however many operations name it, every method for anyMethod, nothing for a null handler", async () => {
    const app = new Hono<AppEnv>();
    mountRoutes(
      app,
      [
        route(
          [op("post", "/m/{model}:a", { served: "/m/:t{.+}" }), op("post", "/m/{model}:b", { served: "/m/:t{.+}" })],
          () => (c) => c.text("m"),
        ),
        route(op("post", "/gone"), () => (c) => c.text("gone", 404), { anyMethod: true }),
        route(op("get", "/off"), () => null),
      ],
      {},
    );
    expect(table(app)).toEqual(["POST /m/:t{.+}", "ALL /gone"]);
    expect((await app.request("/gone")).status).toBe(404);
    expect((await app.request("/off")).status).toBe(404);
  });

  it("runs a route's own middleware before its handler", async () => {
    const app = new Hono<AppEnv>();
    const guarded = route(
      op("post", "/out"),
      () => [async (c, next) => (c.req.header("x-ok") ? next() : c.text("no", 401)), (c) => c.text("out")] as const,
    );
    mountRoutes(app, [guarded], {});
    expect((await app.request("/out", { method: "POST" })).status).toBe(401);
    expect(await (await app.request("/out", { method: "POST", headers: { "x-ok": "1" } })).text()).toBe("out");
  });
});
