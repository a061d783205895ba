import { existsSync } from "node:fs";
import path from "node:path";

// The official API descriptions in ../shared/reference/. A lone clone has none, and the tests that compare
// against them are skipped there; CI sets GATEWAY_REQUIRE_REFERENCE=1 (.ci/run), where they must run, so a
// moved or renamed path fails the run instead of silently switching the tests off.

export const referencePath = (...parts: string[]) => path.resolve("..", "shared", "reference", ...parts);

/** Whether the tests comparing against `file` run: always when required, else when it is there. */
export const compareWithReference = (file: string) => process.env.GATEWAY_REQUIRE_REFERENCE === "1" || existsSync(file);
