import { fileTypeFromTokenizer, type FileTypeResult } from "file-type";
import { AbstractTokenizer, EndOfStreamError, type IRandomAccessFileInfo, type IReadChunkOptions } from "strtok3";
import type { CanonicalBase64 } from "./canonical-base64.js";

// file-type reads a file through a tokenizer (strtok3, its own dependency), at whatever offsets its detectors ask
// for. Over base64 the tokenizer decodes just the bytes asked: a PNG is typed by reading the headers of its chunks
// up to the image data (an `acTL` chunk before it makes it an animated PNG), a few dozen bytes in all, where
// fileTypeFromBuffer needed the whole image decoded first. The answers are the same as over the decoded bytes:
// this mirrors strtok3's BufferTokenizer (the one fileTypeFromBuffer uses) with the buffer decoded lazily.

class Base64Tokenizer extends AbstractTokenizer {
  readonly fileInfo: IRandomAccessFileInfo;

  constructor(private readonly base64: CanonicalBase64) {
    super();
    this.fileInfo = { size: base64.size };
  }

  async readBuffer(target: Uint8Array, options?: IReadChunkOptions): Promise<number> {
    const normal = this.normalizeOptions(target, options);
    const read = await this.peekBuffer(target, normal);
    this.position = normal.position + read;
    return read;
  }

  // async as BufferTokenizer's: a refusal is a rejected promise, which is what file-type's detectors await.
  async peekBuffer(target: Uint8Array, options?: IReadChunkOptions): Promise<number> {
    const normal = this.normalizeOptions(target, options);
    const available = Math.max(0, Math.min(this.base64.size - normal.position, normal.length));
    if (!normal.mayBeLess && available < normal.length) throw new EndOfStreamError();
    if (available > 0) target.set(this.base64.decode(normal.position, normal.position + available));
    return available;
  }

  supportsRandomAccess(): boolean {
    return true;
  }

  setPosition(position: number): void {
    this.validateLength(position, "position");
    this.position = position;
  }
}

/** What file-type makes of the bytes `base64` encodes (undefined: not a type it knows), decoding only what it reads. */
export async function fileTypeOfBase64(base64: CanonicalBase64): Promise<FileTypeResult | undefined> {
  // As fileTypeFromBuffer: a single byte is no type, without asking the detectors.
  if (base64.size < 2) return undefined;
  return fileTypeFromTokenizer(new Base64Tokenizer(base64));
}
