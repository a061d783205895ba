// The arithmetic of `npm run bench`'s report: medians over rounds, overheads over the upstream called directly,
// the verdict against issue 30's targets (relative to the bare proxy measured in the same run), and the ratio of
// every figure between two builds run in the same rounds (--against). Pure functions, tested in
// test/unit/bench-verdict.test.ts.

/** Issue 30's targets, relative to the bare proxy of the same run (docs/performance.md, "Targets"). */
export const TARGETS = {
  throughputRatio: 0.5,
  // +p99 within this many times the bare proxy's, +p50 within `p50SlackMs` of it, at these rates.
  p99Times: { 500: 2, 1000: 2, 2000: 3 },
  p50Rates: [500, 1000],
  p50SlackMs: 0.3,
  // At every rate: the rate reached within this fraction, nothing failed or shed (not saturated).
  achieved: 0.99,
  ttfbSlackMs: 0.3,
  streamCpuTimes: 1.3,
  rssChatMb: 150,
  rssImageMb: 200,
  imageCpuMs: 5,
  // The soak (bench/soak.mjs): the first minute's +p99 within this many times the median of the later minutes',
  // nothing failed in it, and the RSS of the last minute within this fraction of the second minute's.
  soakFirstMinuteTimes: 3,
  soakRssDrift: 0.1,
};

// Median over rounds: one round hit by a busy neighbour should not move the result.
export const median = (xs) => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (!v.length) return NaN;
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};

const errorsOf = (r) => (typeof r.errors === "number" ? r.errors : r.errors.total);

/**
 * One target's figures, each the median over rounds. `r` holds per-round results: `max`, `json` by rate,
 * `stream`, `image` (each with `cpuUs` {own, children} per request) and `other` (the machine's other load).
 */
export function summarize(r) {
  const at = {};
  for (const [rate, runs] of Object.entries(r.json)) {
    at[rate] = {
      p50: median(runs.map((x) => x.latency?.p50 ?? NaN)),
      p99: median(runs.map((x) => x.latency?.p99 ?? NaN)),
      achieved: median(runs.map((x) => x.achievedRate)),
      errors: runs.reduce((a, x) => a + errorsOf(x), 0),
      cpu: median(runs.map((x) => x.cpuUs.own)),
      pg: median(runs.map((x) => x.cpuUs.children)),
      own50: median(runs.filter((x) => x.overhead).map((x) => x.overhead.p50)),
      own99: median(runs.filter((x) => x.overhead).map((x) => x.overhead.p99)),
      lag99: Math.max(0, ...runs.map((x) => x.lag?.p99 ?? 0)),
    };
  }
  return {
    rps: median(r.max.map((x) => x.rps)),
    maxP50: median(r.max.map((x) => x.p50)),
    maxP99: median(r.max.map((x) => x.p99)),
    cpuMax: median(r.max.map((x) => x.cpuUs.own)),
    pgMax: median(r.max.map((x) => x.cpuUs.children)),
    at,
    ttfb50: median(r.stream.map((x) => x.ttfb?.p50 ?? NaN)),
    ttfb99: median(r.stream.map((x) => x.ttfb?.p99 ?? NaN)),
    cpuStream: median(r.stream.map((x) => x.cpuUs.own)),
    image: r.image.length
      ? {
          rps: median(r.image.map((x) => x.rps)),
          p50: median(r.image.map((x) => x.p50)),
          p99: median(r.image.map((x) => x.p99)),
          cpu: median(r.image.map((x) => x.cpuUs.own)),
        }
      : undefined,
    errors:
      r.max.reduce((a, x) => a + x.errors, 0) +
      Object.values(r.json)
        .flat()
        .concat(r.stream)
        .reduce((a, x) => a + errorsOf(x), 0),
    lag99: Math.max(0, ...r.stream.map((x) => x.lag?.p99 ?? 0), ...Object.values(at).map((x) => x.lag99)),
    other: Math.max(0, ...r.other),
  };
}

const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : "-");
const signed = (x, d = 3) => (x >= 0 ? `+${f(x, d)}` : f(x, d));
const mark = (ok) => (ok ? "✓" : "✗");

/**
 * Verdict lines for one gateway target against issue 30's targets, each `{ ok, text }`. `s` holds every target's
 * summary (direct, bare, the gateway under `name`); `rss` the peak RSS of the chat runs and of the image runs.
 */
export function verdicts(s, name, rss) {
  const d = s.direct;
  const b = s.bare;
  const g = s[name];
  const lines = [];
  const add = (ok, text) => lines.push({ ok, text: `${mark(ok)} ${text}` });
  const ratio = g.rps / b.rps;
  add(ratio >= TARGETS.throughputRatio, `max throughput ${Math.round(g.rps)} req/s = ${f(ratio, 2)}× bare (≥ ${TARGETS.throughputRatio})`);
  for (const rate of Object.keys(g.at)
    .map(Number)
    .sort((x, y) => x - y)) {
    const [ga, ba, da] = [g.at[rate], b.at?.[rate], d.at?.[rate]];
    if (!ba || !da) continue;
    const [g50, b50] = [ga.p50 - da.p50, ba.p50 - da.p50];
    const [g99, b99] = [ga.p99 - da.p99, ba.p99 - da.p99];
    const times = TARGETS.p99Times[rate] ?? 2;
    // A bare overhead at or below zero (noise) is held to 0.1 ms, so the ratio stays meaningful.
    const p50ok = !TARGETS.p50Rates.includes(rate) || g50 <= b50 + TARGETS.p50SlackMs;
    const p99ok = g99 <= times * Math.max(b99, 0.1);
    const whole = ga.achieved >= TARGETS.achieved * rate && ga.errors === 0;
    add(
      p50ok && p99ok && whole,
      `@${rate}/s JSON +p50 ${signed(g50)} ms (bare ${signed(b50)}), +p99 ${signed(g99)} ms = ${f(g99 / Math.max(b99, 0.1), 1)}× bare's ` +
        `${signed(b99)} (≤ ${times}×${TARGETS.p50Rates.includes(rate) ? `, +p50 ≤ bare + ${TARGETS.p50SlackMs}` : ""}); ` +
        `reached ${f(ga.achieved, 1)}/s, ${ga.errors} failed or shed`,
    );
  }
  const [gt, bt] = [g.ttfb50 - d.ttfb50, b.ttfb50 - d.ttfb50];
  add(gt <= bt + TARGETS.ttfbSlackMs, `stream +TTFB p50 ${signed(gt)} ms (bare ${signed(bt)}; ≤ bare + ${TARGETS.ttfbSlackMs})`);
  add(
    g.cpuStream <= TARGETS.streamCpuTimes * b.cpuStream,
    `CPU per stream ${f(g.cpuStream, 0)} µs = ${f(g.cpuStream / b.cpuStream, 2)}× bare's ${f(b.cpuStream, 0)} (≤ ${TARGETS.streamCpuTimes}×)`,
  );
  add(rss.chat < TARGETS.rssChatMb, `RSS ${Math.round(rss.chat)} MB on chat (< ${TARGETS.rssChatMb})`);
  if (g.image) {
    add(rss.image < TARGETS.rssImageMb, `RSS ${Math.round(rss.image)} MB with images (< ${TARGETS.rssImageMb})`);
    add(g.image.cpu / 1000 < TARGETS.imageCpuMs, `CPU per 1 MiB image ${f(g.image.cpu / 1000, 2)} ms (< ${TARGETS.imageCpuMs})`);
  }
  return lines;
}

/** The figures compared between two builds, each read from one round's results of a target. */
export const FIGURES = [
  ["max req/s", (r) => r.max?.rps],
  ["CPU µs/req at max", (r) => r.max?.cpuUs.own],
  ["PostgreSQL µs/req at max", (r) => r.max?.cpuUs.children],
  ["stream TTFB p50", (r) => r.stream?.ttfb?.p50],
  ["stream TTFB p99", (r) => r.stream?.ttfb?.p99],
  ["CPU µs/stream", (r) => r.stream?.cpuUs.own],
  ["image CPU µs", (r) => r.image?.cpuUs.own],
];

const jsonFigures = (rate) => [
  [`JSON p50 @${rate}/s`, (r) => r.json[rate]?.latency?.p50],
  [`JSON p99 @${rate}/s`, (r) => r.json[rate]?.latency?.p99],
  [`CPU µs/req @${rate}/s`, (r) => r.json[rate]?.cpuUs.own],
  [`PostgreSQL µs/req @${rate}/s`, (r) => r.json[rate]?.cpuUs.children],
];

/** Round `i` of a target's results, every kind of run in one object. */
const roundOf = (r, i) => ({
  max: r.max[i],
  stream: r.stream[i],
  image: r.image[i],
  json: Object.fromEntries(Object.entries(r.json).map(([rate, runs]) => [rate, runs[i]])),
});

/**
 * Every figure of build `a` over the same figure of build `b`, per round (the rounds interleave them, so each
 * round's pair saw the same machine), as the median ratio and its spread over rounds. Latencies are the
 * overheads over direct of the same round. Below 1 is better for every figure but throughput.
 */
export function compareBuilds(res, a, b) {
  const rounds = res[a].max.length;
  const rates = Object.keys(res[a].json);
  const rows = [];
  for (const [label, read] of [...FIGURES, ...rates.flatMap(jsonFigures)]) {
    const latency = /p50|p99/.test(label);
    const ratios = [];
    const values = { a: [], b: [] };
    for (let i = 0; i < rounds; i++) {
      const base = latency ? read(roundOf(res.direct, i)) : 0;
      const [x, y] = [read(roundOf(res[a], i)) - base, read(roundOf(res[b], i)) - base];
      if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
      values.a.push(x);
      values.b.push(y);
      // An overhead at or below zero has no meaningful ratio: held at 0.01 ms.
      ratios.push(latency ? Math.max(x, 0.01) / Math.max(y, 0.01) : x / y);
    }
    if (!ratios.length) continue;
    rows.push({
      figure: latency ? `+${label} (over direct)` : label,
      a: median(values.a),
      b: median(values.b),
      ratio: median(ratios),
      min: Math.min(...ratios),
      max: Math.max(...ratios),
    });
  }
  return rows;
}

/** compareBuilds' rows as printable lines. */
export function formatComparison(rows, a, b) {
  const width = Math.max(...rows.map((r) => r.figure.length));
  const lines = [`\n${a} / ${b}, per round (median ratio [spread over rounds]); below 1 is better except for req/s:`];
  for (const r of rows) {
    const d = r.figure.includes("p50") || r.figure.includes("p99") ? 3 : 0;
    lines.push(
      `  ${r.figure.padEnd(width)}  ${f(r.a, d).padStart(9)} vs ${f(r.b, d).padStart(9)}  ${f(r.ratio, 2)}× [${f(r.min, 2)}–${f(r.max, 2)}]`,
    );
  }
  return lines;
}

/**
 * The soak's verdict lines (`{ ok, text }`). `minutes` holds each minute's `{ latency, errors, rssMb }` (latency
 * percentiles in ms, `rssMb` the peak of that minute), `direct` the upstream's own percentiles at the same rate.
 */
export function soakVerdicts(minutes, direct) {
  const lines = [];
  const add = (ok, text) => lines.push({ ok, text: `${mark(ok)} ${text}` });
  const plus99 = minutes.map((m) => (m.latency ? m.latency.p99 - direct.p99 : NaN));
  const first = minutes[0];
  add(first.errors.total === 0, `first minute: ${first.errors.total} requests failed or shed (none)`);
  if (minutes.length > 1) {
    const later = median(plus99.slice(1));
    const limit = TARGETS.soakFirstMinuteTimes * Math.max(later, 0.1);
    add(
      plus99[0] <= limit,
      `first minute +p99 ${signed(plus99[0])} ms = ${f(plus99[0] / Math.max(later, 0.1), 1)}× the later minutes' median ${signed(later)} (≤ ${TARGETS.soakFirstMinuteTimes}×)`,
    );
    const failed = minutes.slice(1).reduce((a, m) => a + m.errors.total, 0);
    add(failed === 0, `later minutes: ${failed} requests failed or shed`);
  }
  if (minutes.length > 2) {
    const [start, end] = [minutes[1].rssMb, minutes.at(-1).rssMb];
    add(
      end <= start * (1 + TARGETS.soakRssDrift),
      `RSS flat: ${Math.round(start)} MB in minute 2, ${Math.round(end)} MB in the last (≤ +${TARGETS.soakRssDrift * 100}%)`,
    );
  }
  return lines;
}
