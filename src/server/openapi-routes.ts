import { z } from "zod";
import { ours } from "../openapi/operation.js";
import { route } from "./route.js";

const documentSchema = z.looseObject({
  openapi: z.literal("3.1.0"),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});

export interface OpenApiRouteDeps {
  /** The API description of every route the app serves (src/runtime/routes.ts). */
  apiDescription(): Record<string, unknown>;
}

/** GET /openapi.json, built on the first request (about half a megabyte) and kept. */
export const openApiRoute = route<OpenApiRouteDeps>(
  {
    method: "get",
    path: "/openapi.json",
    operationId: "getApiDescription",
    summary: "This document: the OpenAPI 3.1 description of the gateway's API",
    tag: "Operations",
    access: "public",
    ok: { status: 200, description: "The description.", schema: ours("OpenApiDocument", documentSchema) },
  },
  ({ apiDescription }) => {
    let text: string | undefined;
    return (c) => {
      text ??= JSON.stringify(apiDescription());
      c.header("Content-Type", "application/json; charset=utf-8");
      return c.body(text);
    };
  },
);
