import { Hono } from "hono";
import { z } from "zod";
import type { RequestRead } from "../db/faults.js";
import type { Pool } from "../db/pool.js";
import { ours, type OperationDescription } from "../server/api-description.js";
import { validate } from "../server/body.js";
import type { AppEnv } from "../server/context.js";
import { listUserRequests, userRequestPageSchema } from "./queries.js";
import { pageSizeQuery } from "../server/query-wire.js";

const listQuery = z.object({
  limit: pageSizeQuery({ min: 1, max: 100, fallback: 20 }, "Requests per page, 1 to 100 (default 20)."),
  cursor: z.string().optional().meta({ description: "The `next_cursor` of the previous page." }),
});

/** Mounted under /api/v1/user (session auth): a user's own request log, with the quota charged per request. */
export function userRequestRoutes(deps: { pool: Pool; read: RequestRead }) {
  return new Hono<AppEnv>().get("/requests", async (c) => {
    const query = validate(listQuery, c.req.query());
    return c.json(await deps.read(() => listUserRequests(deps.pool, c.get("session").userId, query)));
  });
}

export const userRequestOperations: OperationDescription[] = [
  {
    method: "get",
    path: "/api/v1/user/requests",
    operationId: "listUserRequests",
    summary: "The session user's own request log, newest first, with the quota charged per request",
    tag: "Account",
    access: "session",
    query: listQuery,
    ok: { status: 200, description: "One page of requests.", schema: ours("UserRequestPage", userRequestPageSchema) },
    errors: ["invalid_cursor"],
  },
];
