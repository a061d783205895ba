// Every feature folder owns its tables; this index is what drizzle-kit and the query builder see.
export * from "../auth/schema.js";
export * from "../analytics/schema.js";
export * from "../quota/schema.js";
