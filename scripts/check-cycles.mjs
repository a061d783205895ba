#!/usr/bin/env node
// No import cycles in src/ or worker-kit/, between files or between folders at any depth (issues 12, 31; docs/architecture.md, "Layout"): a
// cycle is where a one-way layering quietly stops being one. Run by `npm run lint`; `findCycles` is what
// test/unit/import-layers.test.ts proves on examples.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

// Relative imports and re-exports, type-only ones included (they tie the modules together just the same).
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g;

// A package's build output and installed dependencies are not its sources (worker-kit/dist holds .d.ts files).
const NOT_SOURCES = new Set(["dist", "node_modules"]);

function sourceFiles(dir) {
  return readdirSync(dir).flatMap((entry) => {
    if (NOT_SOURCES.has(entry)) return [];
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(full) ? [full] : [];
  });
}

/** Strongly connected components of more than one node (Tarjan). */
function components(nodes, next) {
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (v) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const members = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      members.push(w);
    } while (w !== v);
    if (members.length > 1) found.push(members.sort());
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return found;
}

/** The source file a `.js` import names: its `.ts`, or its `.tsx` (worker-kit's Ink components). */
function sourceOf(target) {
  const tsx = target.replace(/\.js$/, ".tsx");
  return existsSync(tsx) ? tsx : target.replace(/\.js$/, ".ts");
}

/** The file-level and folder-level import cycles under `root` (paths relative to it). */
export function findCycles(root) {
  const imports = new Map();
  for (const file of sourceFiles(root)) {
    const targets = new Set();
    for (const match of readFileSync(file, "utf8").matchAll(IMPORT)) {
      const target = sourceOf(path.resolve(path.dirname(file), match[1] ?? match[2]));
      if (target.startsWith(root + path.sep)) targets.add(path.relative(root, target));
    }
    imports.set(path.relative(root, file), [...targets]);
  }
  // Inside every folder, at every depth, its children (each subfolder, and each file directly in it: src/errors.ts is
  // a "folder" of its own among src's) import one way: an import from one child into another is an edge between
  // them, and a cycle among one folder's children is a cycle between folders (metering/relays/ <-> metering/meter.ts).
  const edges = new Map();
  for (const [file, targets] of imports) {
    const from = file.split(path.sep);
    for (const target of targets) {
      const to = target.split(path.sep);
      let depth = 0;
      while (depth < from.length - 1 && depth < to.length - 1 && from[depth] === to[depth]) depth++;
      // Two files side by side are the file check's business.
      if (from[depth] === to[depth] || (depth === from.length - 1 && depth === to.length - 1)) continue;
      const node = (parts) =>
        parts
          .slice(0, depth + 1)
          .join("/")
          .replace(/\.tsx?$/, "");
      if (!edges.has(node(from))) edges.set(node(from), new Set());
      edges.get(node(from)).add(node(to));
    }
  }
  return {
    files: components([...imports.keys()], (f) => imports.get(f) ?? []),
    folders: components([...edges.keys()], (f) => [...(edges.get(f) ?? [])]),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let failed = false;
  for (const dir of process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["src"]) {
    const root = path.resolve(dir);
    const { files, folders } = findCycles(root);
    for (const cycle of files) console.error(`import cycle between files: ${cycle.join(" <-> ")}`);
    for (const cycle of folders) console.error(`import cycle between folders: ${cycle.join(" <-> ")}`);
    if (files.length + folders.length > 0) failed = true;
    else console.log(`no import cycles in ${path.relative(process.cwd(), root) || "."}`);
  }
  if (failed) process.exit(1);
}
