import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  // Each feature folder owns its tables; listing them here keeps src/db from importing the folders above it.
  schema: [
    "./src/auth/schema.ts",
    "./src/analytics/schema.ts",
    "./src/analytics/outbox-schema.ts",
    "./src/quota/schema.ts",
    "./src/media/schema.ts",
    "./src/support/schema.ts",
    "./src/catalog/schema.ts",
    "./src/transfers/schema.ts",
    "./src/balances/schema.ts",
  ],
  out: "./migrations",
});
