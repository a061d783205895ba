import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

// Sources run from src/ (tests) and from dist/src/ (the built CLI): find the package root by its manifest
// instead of counting directory levels.
function findPackageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, "package.json")) || !existsSync(path.join(dir, "migrations"))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("cannot locate the gateway package root");
    dir = parent;
  }
  return dir;
}

export const packageRoot = findPackageRoot();
