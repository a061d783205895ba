import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.{ts,tsx}"],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 90_000,
    pool: "forks",
    // Two cores: each integration file brings its own database and servers.
    maxWorkers: 2,
  },
});
