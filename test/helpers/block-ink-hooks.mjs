// The resolve hook registered by block-ink.mjs (it runs on the loader thread).
const BLOCKED = ["ink", "react", "ink-testing-library"];

export async function resolve(specifier, context, nextResolve) {
  if (BLOCKED.some((name) => specifier === name || specifier.startsWith(`${name}/`))) {
    throw new Error(`blocked by the test hook: ${specifier}`);
  }
  return nextResolve(specifier, context);
}
