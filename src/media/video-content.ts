import { fileTypeFromBuffer } from "file-type";
import type { Logger } from "pino";
import type { Config } from "../config/schema.js";
import { GatewayError } from "../errors.js";
import type { Providers } from "../providers/registry.js";
import { SafeDownloadError, type SafeDownloader } from "../providers/safe-download.js";
import { UpstreamError, type ByteStream } from "../providers/types.js";
import type { StoredVideo, VideoJobRow } from "./video-jobs.js";

// The bytes of a completed job's video (docs/api.md, "Video", "Videos"), streamed to the client as they arrive,
// never read whole: from the link the upstream gave (the `video` protocol), through the SSRF-checked downloader,
// or from the provider itself with its key (OpenAI's `/videos/{id}/content`). Either way under
// media.download (max_bytes, timeout_ms), and only once the first bytes are a video: anything else is a 502 that
// shows nothing of what the upstream sent.

export interface VideoContentDeps {
  config: Config;
  providers: Providers;
  download: SafeDownloader;
}

/** A video ready to send: its type (by its bytes, written here) and its body, the bytes sniffed included. */
export interface VideoBody {
  contentType: string;
  body: ReadableStream<Uint8Array>;
}

/** The video formats served, by file-type's extension; their MIME types are written here, never taken from upstream. */
const VIDEO_FORMATS: Record<string, string> = { mp4: "video/mp4", m4v: "video/mp4", mov: "video/quicktime", webm: "video/webm" };

/** file-type's sample size: enough of the head for every format above. */
const SNIFF_BYTES = 4100;

/** Declared types that say nothing (signed-link stores often send them): the bytes alone decide. */
const UNTYPED = new Set(["application/octet-stream", "binary/octet-stream"]);

const failure = (message: string, code: "upstream_error" | "upstream_answer_too_large" = "upstream_error") =>
  new GatewayError({ code, message });

const RETRY_LATER = "The provider's video could not be fetched; retry later.";

/** The video's bytes as they come, and what it is; throws the client's error when it cannot be served. */
export async function openVideo(deps: VideoContentDeps, job: VideoJobRow, video: StoredVideo, logger: Logger): Promise<VideoBody> {
  const { max_bytes: maxBytes, timeout_ms: timeoutMs } = deps.config.media.download;
  const signal = AbortSignal.timeout(timeoutMs);
  const log = (fields: Record<string, unknown>, event: string) => logger.warn({ job_id: job.id, provider: job.provider, ...fields }, event);
  try {
    const stream = "url" in video ? await deps.download.stream(video.url, signal) : await fromProvider(deps, job, signal, maxBytes);
    return await checkedVideo(stream, (err) => log(failureFields(err), "VIDEO_CONTENT_INTERRUPTED"), log);
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    if (!(err instanceof SafeDownloadError || err instanceof UpstreamError)) throw err;
    log(failureFields(err), "VIDEO_DOWNLOAD_FAILED");
    throw clientError(err, maxBytes);
  }
}

async function fromProvider(deps: VideoContentDeps, job: VideoJobRow, signal: AbortSignal, maxBytes: number): Promise<ByteStream> {
  const provider = Object.hasOwn(deps.config.providers, job.provider) ? deps.config.providers[job.provider] : undefined;
  const adapter = deps.providers.get(job.provider);
  // The provider left the config (or no longer serves video): nobody can fetch the job's video any more.
  if (!provider || !adapter?.videoContent) throw new UpstreamError("connect", null);
  const target = { providerId: job.provider, provider, upstreamModel: job.upstreamModel };
  return adapter.videoContent(job.upstreamJobId, { target, signal }, maxBytes);
}

function failureFields(err: unknown): Record<string, unknown> {
  if (err instanceof SafeDownloadError) return { reason: err.reason, status: err.status };
  if (err instanceof UpstreamError) return { reason: err.failure, status: err.status, network: err.network };
  return { reason: "other" };
}

/** What the client is told of a fetch that failed before a byte was sent: never the upstream's words. */
function clientError(err: SafeDownloadError | UpstreamError, maxBytes: number): GatewayError {
  const status = err.status;
  if (status === 404 || status === 410) {
    return new GatewayError({
      code: "video_expired",
      message: "The provider no longer has this video (its files expire some time after the job ends); it cannot be fetched any more.",
    });
  }
  const tooLarge = err instanceof SafeDownloadError ? err.reason === "too_large" : err.failure === "too_large";
  if (tooLarge) return failure(`The provider's video is larger than this gateway serves (${maxBytes} bytes).`, "upstream_answer_too_large");
  return failure(RETRY_LATER);
}

/**
 * Reads the head (up to SNIFF_BYTES) and checks it is a video of a served format, under a declared type that is
 * a video's or says nothing; then hands over the rest as it arrives. A failure after the first byte was sent can
 * only cut the response short (`interrupted` hears of it).
 */
async function checkedVideo(
  stream: ByteStream,
  interrupted: (err: unknown) => void,
  log: (fields: Record<string, unknown>, event: string) => void,
): Promise<VideoBody> {
  const chunks = stream.chunks[Symbol.asyncIterator]();
  const declared = stream.contentType?.split(";")[0]!.trim().toLowerCase() ?? null;
  if (declared !== null && !declared.startsWith("video/") && !UNTYPED.has(declared)) {
    await chunks.return?.();
    log({ reason: "not_video", declared }, "VIDEO_CONTENT_REFUSED");
    throw failure("The provider's answer was not a video.");
  }
  const head: Buffer[] = [];
  let length = 0;
  let done = false;
  while (length < SNIFF_BYTES) {
    const next = await chunks.next();
    if (next.done) {
      done = true;
      break;
    }
    head.push(next.value);
    length += next.value.length;
  }
  const first = Buffer.concat(head, length);
  const type = VIDEO_FORMATS[(await fileTypeFromBuffer(first))?.ext ?? ""];
  if (type === undefined) {
    if (!done) await chunks.return?.();
    log({ reason: "not_video", declared }, "VIDEO_CONTENT_REFUSED");
    throw failure("The provider's answer was not a video.");
  }
  return { contentType: type, body: bodyOf(first, done ? null : chunks, interrupted) };
}

/** `first`, then the rest of the chunks, pulled only as fast as the client reads; a client that leaves closes the upstream. */
function bodyOf(first: Buffer, rest: AsyncIterator<Buffer> | null, interrupted: (err: unknown) => void): ReadableStream<Uint8Array> {
  let sentFirst = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sentFirst) {
        sentFirst = true;
        if (first.length > 0) controller.enqueue(first);
        if (rest === null) controller.close();
        return;
      }
      try {
        const next = await rest!.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (err) {
        interrupted(err);
        controller.error(err);
      }
    },
    async cancel() {
      await rest?.return?.();
    },
  });
}
