// Small helpers for tests of async iteration: a byte source split where the test says, and draining one.

/** Yields each part as one network read would. */
export async function* bytes(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield new TextEncoder().encode(part);
}

/** Everything a source yields, in order. */
export async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}
