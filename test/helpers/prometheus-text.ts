// Reads the Prometheus text format as the gateway writes it: `name{label="value",...} number` lines, `#` comments.

export interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parsePrometheus(text: string): Series[] {
  const series: Series[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? "").matchAll(LABEL))
      labels[name!] = value!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    series.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return series;
}

/** The sum of the samples named `name` whose labels include `labels`; undefined when there is none. */
export function sample(series: Series[], name: string, labels: Record<string, string> = {}): number | undefined {
  const matching = series.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return matching.length === 0 ? undefined : matching.reduce((sum, s) => sum + s.value, 0);
}
