import { defineConfig } from "vitest/config";

// worker-kit's exports have a condition of the repository's own, `@model-gateway/source`, that points at its
// TypeScript sources (worker-kit/package.json; tsconfig.json's customConditions): tests run on the sources, with
// no build of the package first. The rest are Vite's defaults for code run on the server.
const conditions = ["@model-gateway/source", "module", "node", "development|production"];

export default defineConfig({
  ssr: { resolve: { conditions } },
  test: {
    include: ["test/**/*.test.{ts,tsx}"],
    globalSetup: ["test/helpers/global-setup.ts"],
    // No test crosses UTC midnight (a day's allowance is an account per UTC day): one-utc-day.ts.
    setupFiles: ["test/helpers/one-utc-day-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 90_000,
    pool: "forks",
    // Two cores: each integration file brings its own database and servers.
    maxWorkers: 2,
  },
});
