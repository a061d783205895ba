import { Busboy, type BusboyFileStream, type BusboyInstance } from "@fastify/busboy";
import { fileTypeFromBuffer } from "file-type";
import type { Context } from "hono";
import { type GatewayError, errors } from "../errors.js";
import { type BodySink, isJson, readJsonBody, refused, streamCapped } from "../server/body.js";
import type { BodyReservation } from "../server/body-budget.js";
import type { AppEnv } from "../server/context.js";
import { requestHeader } from "../server/headers.js";
import { MAX_EDIT_IMAGES, editFormToJson } from "./image-request-schema.js";

// The body of POST /images/edits (docs/api.md, "Images"): JSON as every other route reads it, or a multipart form
// parsed as its bytes arrive, under the same cap and body budget, so that a bad part is refused before the rest
// of the body is read. Its files become data: URIs in `images` and `mask`, and its text fields the JSON body's,
// so that imageEditJsonSchema checks both forms alike.

/** More than any edit has fields: the form's text fields are a few scalars. */
const MAX_TEXT_FIELDS = 50;

/** The input formats OpenAI takes, by file-type's extension; the MIME type is written here, never the part's. */
const INPUT_TYPES: ReadonlyMap<string, string> = new Map([
  ["png", "image/png"],
  ["jpg", "image/jpeg"],
  ["webp", "image/webp"],
]);

const IMAGE_FIELDS = new Set(["image", "image[]"]);

const isMultipart = (contentType: string) => /^multipart\/form-data\s*(?:;|$)/i.test(contentType);

const malformed = (why: string) => errors.badRequest(`The multipart body is malformed: ${why}.`);

/** An edit body, JSON or multipart, with RouteSpec.read's signature; a multipart body's `text` is "". */
export async function readEditBody(
  c: Context<AppEnv>,
  limit: number,
  reservation: BodyReservation | undefined,
): Promise<{ value: unknown; text: string }> {
  const contentType = requestHeader(c, "content-type");
  if (contentType !== undefined && isMultipart(contentType)) {
    // Built before a byte is read: a form without a boundary is refused without its body (nor 100 Continue).
    const form = formReader(contentType, limit);
    await streamCapped(c, limit, reservation, form.sink);
    return { value: await form.finish(), text: "" };
  }
  if (!isJson(contentType)) {
    throw refused(c, errors.unsupportedMediaType("Content-Type must be application/json or multipart/form-data."));
  }
  return readJsonBody(c, limit, reservation);
}

interface FormReader {
  /** Takes the body's chunks; returns the form's refusal once it has one, which stops the reading. */
  sink: BodySink;
  /** Once the body has ended: the form as a JSON edit body, or its refusal. */
  finish(): Promise<Record<string, unknown>>;
}

function formReader(contentType: string, limit: number): FormReader {
  let busboy: BusboyInstance;
  try {
    busboy = Busboy({
      headers: { "content-type": contentType },
      limits: { fields: MAX_TEXT_FIELDS, fieldSize: limit },
      // The image fields are files whatever their part says: a part without a filename still holds bytes to sniff.
      isPartAFile: (name, type, filename) =>
        filename !== undefined || type === "application/octet-stream" || (name !== undefined && isFileField(name)),
    });
  } catch {
    // Busboy throws only for the boundary: missing, empty or longer than it can search for.
    throw malformed("the Content-Type has no usable boundary");
  }
  const fields: Record<string, string | string[]> = Object.create(null);
  const images: Promise<string>[] = [];
  let mask: Promise<string> | undefined;
  let failure: GatewayError | undefined;
  const fail = (err: GatewayError) => {
    failure ??= err;
  };

  busboy.on("field", (name: string | undefined, value: string, _nameTruncated: boolean, valueTruncated: boolean) => {
    if (name === undefined) return fail(malformed("a part has no name"));
    if (valueTruncated) return fail(errors.payloadTooLarge(limit));
    const prior = fields[name];
    if (prior === undefined) fields[name] = value;
    else if (typeof prior === "string") fields[name] = [prior, value];
    else prior.push(value);
  });
  busboy.on("fieldsLimit", () => fail(errors.badRequest(`A multipart edit takes at most ${MAX_TEXT_FIELDS} text fields.`)));
  busboy.on("file", (name: string | undefined, stream: BusboyFileStream) => {
    const refusal = fileRefusal(name, images.length, mask !== undefined);
    if (refusal || failure) {
      if (refusal) fail(refusal);
      stream.on("error", ignore);
      stream.resume();
      return;
    }
    const param = name === "mask" ? "mask" : "image";
    const index = images.length + 1;
    const uri = collect(stream).then((bytes) => dataUri(bytes, param, index));
    // Refused as soon as it is sniffed, so that the rest of the body is not read for nothing.
    uri.catch(fail);
    if (param === "mask") mask = uri;
    else images.push(uri);
  });
  const settled = new Promise<void>((resolve) => {
    busboy.once("finish", resolve);
    busboy.once("error", (err: Error) => {
      fail(malformed(err.message.replace(/\.$/, "")));
      resolve();
    });
  });

  return {
    sink(chunk) {
      if (!failure) busboy.write(chunk);
      return failure;
    },
    async finish() {
      if (!failure) {
        busboy.end();
        await settled;
      }
      if (failure) throw failure;
      if (images.length === 0)
        throw errors.badRequest("A multipart edit needs an image file, sent as image or image[].", "image", "invalid_value");
      const body = editFormToJson(fields);
      body.images = await Promise.all(images);
      if (mask) body.mask = await mask;
      return body;
    },
  };
}

const isFileField = (name: string) => IMAGE_FIELDS.has(name) || name === "mask";

function fileRefusal(name: string | undefined, imageCount: number, hasMask: boolean): GatewayError | undefined {
  if (name === undefined) return malformed("a part has no name");
  if (IMAGE_FIELDS.has(name)) {
    return imageCount < MAX_EDIT_IMAGES
      ? undefined
      : errors.badRequest(`An edit takes at most ${MAX_EDIT_IMAGES} images.`, "image", "invalid_value");
  }
  if (name === "mask") return hasMask ? errors.badRequest("An edit takes one mask.", "mask", "invalid_value") : undefined;
  return errors.badRequest(
    `File field ${JSON.stringify(name)} is not taken: the files of an edit are image (or image[]) and mask.`,
    name,
    "invalid_value",
  );
}

const ignore = () => {};

/** A file part's bytes; a part cut short also fails the whole form (busboy's "error"), which is what is reported. */
function collect(stream: BusboyFileStream): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", ignore);
    stream.on("end", () => resolve(Buffer.concat(chunks)));
  });
}

/** The file as a data: URI of the type its bytes are; `index` counts the images from 1, for the message. */
async function dataUri(bytes: Buffer, param: "image" | "mask", index: number): Promise<string> {
  const type = await fileTypeFromBuffer(bytes);
  const mime = type && INPUT_TYPES.get(type.ext);
  if (!mime) {
    const what = param === "mask" ? "The mask" : `Image ${index}`;
    const found = type ? `of type ${type.mime}` : "not an image";
    throw errors.badRequest(`${what} is ${found}; only PNG, JPEG and WebP images are taken.`, param, "invalid_value");
  }
  return `data:${mime};base64,${bytes.toString("base64")}`;
}
