import type { ImageDownload } from "../../src/providers/upstream-images/image-delivery.js";

// Fake image downloaders for delivery tests: the gateway's downloader hands a body over as it arrives
// (SafeDownloader.stream); most tests only care about the whole body, or about the download failing.

/** The pieces, one after the other, as a download's chunks. */
export async function* chunksOf(...pieces: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const piece of pieces) yield piece;
}

/** A downloader whose `whole` answers a link's body at once (or rejects), handed over as one chunk. */
export function downloader(whole: (url: string, signal: AbortSignal) => Promise<{ bytes: Buffer }>): ImageDownload {
  return { stream: async (url, signal) => ({ chunks: chunksOf((await whole(url, signal)).bytes) }) };
}
