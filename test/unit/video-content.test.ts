import pino from "pino";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { GatewayError } from "../../src/errors.js";
import { openVideo, type VideoContentDeps } from "../../src/media/video-content.js";
import type { StoredVideo, VideoJobRow } from "../../src/media/video-jobs.js";
import { mockVideoBytes } from "../../src/mock-upstream/openai-videos.js";
import type { Providers } from "../../src/providers/registry.js";
import { SafeDownloadError, type SafeDownloader } from "../../src/providers/safe-download.js";
import { UpstreamAnswerTooLargeError, UpstreamError, type ByteStream } from "../../src/providers/types.js";

// A completed job's video as the content route serves it (src/media/video-content.ts): streamed as it arrives,
// typed by its own bytes, and refused (502, nothing of the upstream's) when it is not a video, whatever the
// upstream declared; a link's and a provider's failures told to the client in the gateway's words.

const config = parseConfig({}, "test.yaml", {});
const job = { id: "job-1", provider: "oa", upstreamJobId: "video_1", upstreamModel: "sora-2" } as VideoJobRow;
const link: StoredVideo = { url: "https://cdn.example.test/v.mp4", duration: 4 };
const logger = pino({ level: "silent" });

async function* chunksOf(parts: Buffer[], failAfter?: Error): AsyncGenerator<Buffer> {
  for (const part of parts) yield part;
  if (failAfter) throw failAfter;
}

/** Deps whose downloader answers `stream` (or fails with `error`) for every link. */
function deps(answer: ByteStream | Error): VideoContentDeps {
  const stream = async () => {
    if (answer instanceof Error) throw answer;
    return answer;
  };
  const download = Object.assign(async () => Promise.reject(new Error("read whole")), { stream }) as unknown as SafeDownloader;
  return { config, providers: new Map() as unknown as Providers, download };
}

async function bytesOf(body: ReadableStream<Uint8Array>): Promise<Buffer> {
  return Buffer.from(await new Response(body).arrayBuffer());
}

async function refusal(d: VideoContentDeps, video: StoredVideo = link): Promise<GatewayError> {
  try {
    await openVideo(d, job, video, logger);
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error("served");
}

const mp4 = mockVideoBytes("a");
/** The MP4 in pieces smaller than the sniff needs: the head is gathered over several reads. */
const pieces = Array.from({ length: Math.ceil(mp4.length / 1000) }, (_, i) => mp4.subarray(i * 1000, (i + 1) * 1000));

describe("serving a video job's content", () => {
  it.each([["video/mp4"], ["application/octet-stream"], [null]])("streams an MP4 declared %s, typed by its bytes", async (declared) => {
    const served = await openVideo(deps({ contentType: declared, chunks: chunksOf(pieces) }), job, link, logger);
    expect(served.contentType).toBe("video/mp4");
    expect((await bytesOf(served.body)).equals(mp4)).toBe(true);
  });

  it("serves a video shorter than the sniff's sample", async () => {
    const tiny = mp4.subarray(0, 24);
    const served = await openVideo(deps({ contentType: "video/mp4", chunks: chunksOf([tiny]) }), job, link, logger);
    expect((await bytesOf(served.body)).equals(tiny)).toBe(true);
  });

  it.each([
    ["text/html", Buffer.from("<!doctype html><p>login</p>")],
    ["video/mp4", Buffer.from("<!doctype html><p>login</p>")],
    ["application/json", mp4],
    ["video/mp4", Buffer.alloc(0)],
  ])("refuses an answer declared %s whose bytes are not a video it serves", async (declared, bytes) => {
    const err = await refusal(deps({ contentType: declared, chunks: chunksOf([bytes]) }));
    expect(err).toMatchObject({ status: 502, code: "upstream_error" });
    expect(err.message).not.toMatch(/login|doctype/);
  });

  it.each([
    [new SafeDownloadError("status", "404", 404), 410, "video_expired"],
    [new SafeDownloadError("status", "410", 410), 410, "video_expired"],
    [new SafeDownloadError("too_large", "big"), 502, "upstream_answer_too_large"],
    [new SafeDownloadError("private_address", "no"), 502, "upstream_error"],
    [new SafeDownloadError("status", "500", 500), 502, "upstream_error"],
  ])("answers a link that failed with %s as %i %s", async (failure, status, code) => {
    expect(await refusal(deps(failure))).toMatchObject({ status, code });
  });

  it("cuts the response short when the upstream fails after the first bytes were sent", async () => {
    const served = await openVideo(
      deps({ contentType: "video/mp4", chunks: chunksOf(pieces, new UpstreamError("timeout", null)) }),
      job,
      link,
      logger,
    );
    await expect(bytesOf(served.body)).rejects.toThrow();
  });

  it("fetches a provider's video through its content capability, and answers its 404 and its cap", async () => {
    const answers: (ByteStream | Error)[] = [
      { contentType: "video/mp4", chunks: chunksOf([mp4]) },
      new UpstreamError("status", 404),
      new UpstreamAnswerTooLargeError(10, 200),
    ];
    const seen: { id: string; maxBytes: number }[] = [];
    const adapter = {
      videoContent: async (id: string, _options: unknown, maxBytes: number) => {
        seen.push({ id, maxBytes });
        const answer = answers.shift()!;
        if (answer instanceof Error) throw answer;
        return answer;
      },
    };
    const provider = parseConfig({ providers: { oa: { protocol: "openai", base_url: "https://api.example.test/v1" } } }, "t.yaml", {});
    const d: VideoContentDeps = {
      ...deps(new Error("no link here")),
      config: provider,
      providers: new Map([["oa", adapter]]) as unknown as Providers,
    };
    const fromProvider: StoredVideo = { content: "provider", duration: 4 };
    const served = await openVideo(d, job, fromProvider, logger);
    expect((await bytesOf(served.body)).equals(mp4)).toBe(true);
    expect(seen[0]).toEqual({ id: "video_1", maxBytes: config.media.download.max_bytes });
    expect(await refusal(d, fromProvider)).toMatchObject({ status: 410, code: "video_expired" });
    expect(await refusal(d, fromProvider)).toMatchObject({ status: 502, code: "upstream_answer_too_large" });
    // A provider no longer in the config cannot be asked.
    expect(await refusal({ ...d, config }, fromProvider)).toMatchObject({ status: 502, code: "upstream_error" });
  });
});
