// Where the objects that outlive the young generation are allocated (docs/performance.md, "Finding what is
// promoted"). Loaded with `node --import bench/heap-sample.mjs`; nothing of it is in the gateway's own code.
//
// SIGUSR2 starts V8's sampling heap profiler, keeping samples of objects later freed by a mark-compact but not
// those freed by a scavenge: what it reports was promoted (or is still alive). The next SIGUSR2 writes the
// profile to $BENCH_PROBE_DIR/heap-sample-<pid>-<n>.json; bench/heap-sample-report.mjs reads it.
import { Session } from "node:inspector";
import { writeFileSync } from "node:fs";
import path from "node:path";

const dir = process.env.BENCH_PROBE_DIR ?? process.cwd();
const session = new Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));

let sampling = false;
let count = 0;
process.on("SIGUSR2", () => {
  void toggle().catch((err) => process.stderr.write(`heap-sample: ${err.message}\n`));
});

async function toggle() {
  if (!sampling) {
    sampling = true;
    await post("HeapProfiler.enable");
    // 256 bytes: fine enough to see objects of a few hundred bytes per request.
    await post("HeapProfiler.startSampling", {
      samplingInterval: 256,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: false,
    });
    return;
  }
  sampling = false;
  const { profile } = await post("HeapProfiler.stopSampling");
  const file = path.join(dir, `heap-sample-${process.pid}-${count++}.json`);
  writeFileSync(file, JSON.stringify(profile));
  process.stderr.write(`heap-sample: ${file}\n`);
}
