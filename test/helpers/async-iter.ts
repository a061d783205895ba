import { Readable } from "node:stream";
import type { EventStream, StreamEvent } from "../../src/providers/types.js";

// Small helpers for tests of streams: a body split where the test says, and draining an async iterable or an
// upstream event stream.

/** A body whose reads are the parts, one per network read. */
export function bytes(...parts: string[]): Readable {
  return Readable.from(parts.map((part) => Buffer.from(part)));
}

/** Everything a source yields, in order. */
export async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

/** Every batch of an event stream, read one at a time. */
export async function batchesOf(events: EventStream): Promise<StreamEvent[][]> {
  const out: StreamEvent[][] = [];
  for (let batch = await events.next(); batch; batch = await events.next()) out.push(batch);
  return out;
}
