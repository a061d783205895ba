import http from "node:http";
import type { AddressInfo } from "node:net";

// Waiting in tests without timing anything: poll a probe until it answers, for as many tries as a loaded machine
// needs, and name what was awaited when it never comes.

/** Polls `probe` until it returns a value (not undefined); fails after `tries` polls `everyMs` apart. */
export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, tries = 600, everyMs = 100): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** A loopback port nothing listens on (one just released). */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
