import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ours, vendor, type OperationDescription } from "../../src/openapi/operation.js";
import { buildOpenApiDocument } from "../../src/openapi/document.js";

type Responses = Record<string, { description: string; content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
type Op = {
  security: unknown[];
  responses: Responses;
  parameters?: { name: string; in: string; required: boolean }[];
  requestBody?: unknown;
};

const build = (operations: OperationDescription[], vendorSchemas: Record<string, unknown> = {}) =>
  buildOpenApiDocument({ operations, vendorSchemas, tags: [] }) as {
    paths: Record<string, Record<string, Op>>;
    components: { schemas: Record<string, Record<string, unknown>> };
  };

const thing = z.object({ id: z.string(), when: z.iso.datetime().optional() });

describe("buildOpenApiDocument", () => {
  it("a public read: no security, its schema from zod, the internal error only", () => {
    const doc = build([
      {
        method: "get",
        path: "/things",
        operationId: "things",
        summary: "s",
        tag: "T",
        access: "public",
        ok: { status: 200, description: "d", schema: ours("Thing", thing) },
      },
    ]);
    const op = doc.paths["/things"]!.get!;
    expect(op.security).toEqual([]);
    expect(Object.keys(op.responses)).toEqual(["200", "500"]);
    expect(op.responses["200"]!.content).toEqual({ "application/json": { schema: { $ref: "#/components/schemas/Thing" } } });
    expect(doc.components.schemas.Thing).toMatchObject({ type: "object", required: ["id"], additionalProperties: false });
    expect(doc.components.schemas.ErrorResponse).toMatchObject({ required: ["error"] });
  });

  it("an admin state change with a body: CSRF in its security and every implied error under its status", () => {
    const doc = build([
      {
        method: "post",
        path: "/admin/things/{id}",
        operationId: "change",
        summary: "s",
        tag: "T",
        access: "admin",
        pathParams: { id: "the id" },
        body: ours("ThingInput", thing),
        ok: { status: 201, description: "d", schema: ours("Thing", thing) },
        errors: ["user_not_found"],
      },
    ]);
    const op = doc.paths["/admin/things/{id}"]!.post!;
    expect(op.security).toEqual([
      { sessionBearer: [], csrfToken: [] },
      { sessionCookie: [], csrfToken: [] },
    ]);
    expect(op.parameters).toEqual([expect.objectContaining({ name: "id", in: "path", required: true })]);
    expect(Object.keys(op.responses)).toEqual(["201", "400", "401", "403", "404", "413", "415", "500", "503"]);
    expect(op.responses["403"]!.description).toBe("Error codes: `admin_required`, `csrf_failed`.");
    expect(op.responses["503"]!.headers).toHaveProperty("Retry-After");
  });

  it("statusOf moves an error to the route's own status", () => {
    const doc = build([
      {
        method: "post",
        path: "/eval",
        operationId: "e",
        summary: "s",
        tag: "T",
        access: "apiKey",
        body: ours("In", thing),
        ok: { status: 200, description: "d" },
        statusOf: (code) => (code === "invalid_json" ? 422 : 400),
      },
    ]);
    const responses = doc.paths["/eval"]!.post!.responses;
    expect(responses["422"]!.description).toContain("invalid_json");
    expect(responses["400"]!.description).not.toContain("invalid_json");
  });

  it("refuses two schemas under one name, an operation described twice and a vendor schema that is not embedded", () => {
    const op = (schema = ours("Thing", thing), path = "/a"): OperationDescription => ({
      method: "get",
      path,
      operationId: "x",
      summary: "s",
      tag: "T",
      access: "public",
      ok: { status: 200, description: "d", schema },
    });
    expect(() => build([op(), op(ours("Thing", z.object({})), "/b")])).toThrow(/two schemas are named Thing/);
    expect(() => build([op(), op()])).toThrow(/described twice/);
    expect(() => build([op(vendor("openai", "Nope"))])).toThrow(/no openai.Nope/);
    expect(build([op(vendor("openai", "Yes"))], { "openai.Yes": {} }).paths["/a"]).toBeDefined();
  });
});
