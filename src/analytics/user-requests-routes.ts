import { z } from "zod";
import type { RequestRead } from "../db/faults.js";
import type { Config } from "../config/schema.js";
import type { Pool } from "../db/pool.js";
import { ours } from "../openapi/operation.js";
import { validate } from "../server/body.js";
import { route } from "../server/route.js";
import { retainedSince } from "./log-range.js";
import { listUserRequests, userRequestPageSchema } from "./queries.js";
import { pageSizeQuery } from "@model-gateway/worker-kit/wire/query";

const listQuery = z.object({
  limit: pageSizeQuery({ min: 1, max: 100, fallback: 20 }, "Requests per page, 1 to 100 (default 20)."),
  cursor: z.string().optional().meta({ description: "The `next_cursor` of the previous page." }),
});

export interface UserRequestRouteDeps {
  /** The request log's database (analytics.database_url, else the main one). */
  logPool: Pool;
  read: RequestRead;
  config: Pick<Config, "retention">;
}

/** A user's own request log, with the quota charged per request. */
export const userRequestsRoute = route<UserRequestRouteDeps>(
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
  ({ logPool, read, config }) =>
    async (c) => {
      const query = validate(listQuery, c.req.query());
      const since = retainedSince(new Date(), config.retention.request_log_days);
      return c.json(await read(() => listUserRequests(logPool, c.get("session").userId, query, since)));
    },
);
