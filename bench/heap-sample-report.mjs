// The allocation sites of a bench/heap-sample.mjs profile, largest first, in bytes per request.
//   node bench/heap-sample-report.mjs --profile heap-sample-PID-0.json --requests 5000 [--top 25] [--depth 4]
// A site is the allocating function and its callers (optimised code reports the outermost function of what it
// inlined, so a large "handle" can be any function handle inlined).
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    profile: { type: "string" },
    requests: { type: "string" },
    top: { type: "string", default: "25" },
    depth: { type: "string", default: "4" },
  },
});
if (!values.profile || !values.requests) {
  process.stderr.write("usage: heap-sample-report.mjs --profile FILE --requests N [--top 25] [--depth 4]\n");
  process.exit(2);
}
const requests = Number(values.requests);
const depth = Number(values.depth);
const { head } = JSON.parse(readFileSync(values.profile, "utf8"));

const frameName = ({ functionName, url, lineNumber }) =>
  `${functionName || "(anonymous)"} ${url.replace(/^.*\/node_modules\//, "").replace(/^.*\/dist\//, "dist/")}:${lineNumber + 1}`;

const sites = new Map();
let total = 0;
(function walk(node, stack) {
  const here = [frameName(node.callFrame), ...stack].slice(0, depth);
  if (node.selfSize > 0) {
    const site = here.join("  <  ");
    sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    total += node.selfSize;
  }
  for (const child of node.children) walk(child, here);
})(head, []);

process.stdout.write(`promoted or alive: ${Math.round(total / requests)} B per request\n`);
for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
  process.stdout.write(`${String(Math.round(bytes / requests)).padStart(7)} B  ${site}\n`);
}
