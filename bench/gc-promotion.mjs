// Bytes allocated and promoted per request, from a `node --trace-gc --trace-gc-nvp` log of the gateway taken
// while a paced load ran at a known rate (docs/performance.md, "Finding what is promoted"). Unlike pause times,
// these bytes do not depend on the other processes on the machine.
//   node bench/gc-promotion.mjs --log gc.log --rate 500 [--seconds 7]
// Uses the scavenges of the last `seconds` of scavenging (the load's end; an idle gateway hardly scavenges).
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { log: { type: "string" }, rate: { type: "string" }, seconds: { type: "string", default: "7" } } });
if (!values.log || !values.rate) {
  process.stderr.write("usage: gc-promotion.mjs --log FILE --rate N [--seconds 7]\n");
  process.exit(2);
}
const field = (line, name) => Number(new RegExp(` ${name}=(\\d+)`).exec(line)?.[1] ?? 0);
const at = (line) => Number(/ (\d+) ms: /.exec(line)?.[1] ?? NaN);
const lines = readFileSync(values.log, "utf8").split("\n");
const scavenges = lines.filter((l) => l.includes(" gc=s "));
if (scavenges.length < 3) {
  process.stderr.write("gc-promotion: fewer than 3 scavenges in the log (was it written with --trace-gc --trace-gc-nvp under load?)\n");
  process.exit(1);
}
const end = at(scavenges.at(-1));
const window = scavenges.filter((l) => at(l) > end - Number(values.seconds) * 1000);
// Each scavenge reports what was allocated since the one before: the first in the window opens it.
const [first, ...rest] = window;
const seconds = (end - at(first)) / 1000;
const perRequest = (name) => Math.round(rest.reduce((sum, l) => sum + field(l, name), 0) / (seconds * Number(values.rate)));
const markCompacts = lines.filter((l) => / gc=(mc|mmc) /.test(l) && at(l) > at(first)).length;
process.stdout.write(
  `${rest.length} scavenges over ${seconds.toFixed(1)} s: allocated ${perRequest("allocated")} B, promoted ${perRequest("promoted")} B per request; ${markCompacts} mark-compacts\n`,
);
