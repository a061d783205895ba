// Object spread followed by other members (`{ ...a, b }`) gives every result a hidden class of its own once
// V8 11 (Node 20) has optimised the code: each request then builds new maps, the objects behind them outlive
// the young generation and fill the old one, and every read of such an object misses its inline cache
// (docs/performance.md, "Object spread"). Code run per request builds objects with literals, or with this.

/** A new object with `base`'s own enumerable members, then `extra`'s; a `__proto__` member is copied as data, as spread does. */
export function extended<A extends object, B extends object>(base: A, extra: B): Omit<A, keyof B> & B {
  const out: Record<string, unknown> = {};
  copyMembers(out, base);
  copyMembers(out, extra);
  return out as Omit<A, keyof B> & B;
}

function copyMembers(out: Record<string, unknown>, from: object): void {
  for (const key in from) {
    if (!Object.hasOwn(from, key)) continue;
    const value = (from as Record<string, unknown>)[key];
    // A JSON body may carry "__proto__" as a plain member: assigning it would replace the prototype instead.
    if (key === "__proto__") Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    else out[key] = value;
  }
}
