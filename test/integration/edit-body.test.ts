import net from "node:net";
import { Hono } from "hono";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayError } from "../../src/errors.js";
import { readEditBody } from "../../src/media/edit-body.js";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { createBodyBudget } from "../../src/server/body-budget.js";
import type { AppEnv } from "../../src/server/context.js";
import { handleError } from "../../src/server/error-envelope.js";
import { testTransport } from "../helpers/gateway-app.js";
import { listen, type HttpServer } from "../../src/server/listen.js";
import { nodePost } from "../helpers/body-clients.js";

// The edit body reader (src/media/edit-body.ts) on a bare app served on loopback, as a route's RouteSpec.read:
// real multipart bodies from FormData + fetch and hand-built ones for what FormData cannot send (no name, cut
// short), under the cap (413), the body budget (503), and a client that leaves mid-body.

const KiB = 1024;
const LIMIT = 512 * KiB;
/** Below LIMIT: a body between the two is refused by the budget alone. */
const BUDGET = 128 * KiB;

/** Told when a request's read begins, and what it threw, for a client that is not there to read the answer. */
let reading: () => void = () => {};
let lastThrown: (err: unknown) => void = () => {};
let server: HttpServer;
let tight: HttpServer;

function app(budget?: ReturnType<typeof createBodyBudget>) {
  const hono = new Hono<AppEnv>();
  hono.onError(handleError);
  hono.post("/:path{edit|images/edits}", async (c) => {
    const reservation = budget?.reserve();
    reading();
    try {
      return c.json(await readEditBody(c, LIMIT, reservation));
    } catch (err) {
      lastThrown(err);
      throw err;
    } finally {
      reservation?.release();
    }
  });
  return hono;
}

beforeAll(async () => {
  server = await listen(app(), "127.0.0.1", 0, testTransport());
  tight = await listen(app(createBodyBudget(BUDGET)), "127.0.0.1", 0, testTransport());
});

afterAll(async () => {
  await server?.close(0);
  await tight?.close(0);
});

const dataUri = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString("base64")}`;
const PNG_URI = dataUri("image/png", MOCK_IMAGES.png);

function form(fields: Record<string, string>, files: [string, Buffer, string?][]): FormData {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  for (const [name, bytes, filename] of files) body.append(name, new Blob([bytes]), filename ?? "upload.bin");
  return body;
}

interface Answer {
  status: number;
  headers: Headers;
  /** The read's result, or the error envelope. */
  body: { value?: Record<string, unknown>; text?: string; error?: { code: string; param: string | null; message: string } };
}

async function post(body: FormData | string | Buffer, headers: Record<string, string> = {}, url = server.url): Promise<Answer> {
  const res = await fetch(`${url}/edit`, { method: "POST", body, headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Answer["body"] };
}

function expectError(answer: Answer, status: number, code: string, param: string | null) {
  expect(answer.status).toBe(status);
  expect(answer.body.error).toMatchObject({ code, param });
}

const BOUNDARY = "edit-boundary";
const multipart = { "content-type": `multipart/form-data; boundary=${BOUNDARY}` };
/** A hand-built multipart body: each part is its header lines and its content; `close` adds the closing delimiter. */
function raw(parts: [string[], string | Buffer][], close = true): Buffer {
  const pieces: Buffer[] = [];
  for (const [headers, content] of parts) {
    pieces.push(Buffer.from(`--${BOUNDARY}\r\n${headers.join("\r\n")}\r\n\r\n`), Buffer.from(content), Buffer.from("\r\n"));
  }
  if (close) pieces.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(pieces);
}
const text = (name: string, value: string): [string[], string] => [[`Content-Disposition: form-data; name="${name}"`], value];

describe("a multipart edit", () => {
  it("reads one image as a data: URI and the text fields", async () => {
    const answer = await post(form({ model: "gpt-image-1", prompt: "a hat" }, [["image", MOCK_IMAGES.png, "cat.png"]]));
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ value: { model: "gpt-image-1", prompt: "a hat", images: [PNG_URI] }, text: "" });
  });

  it("keeps several image[] files in the order sent, the mask, and reads numbers and booleans", async () => {
    const answer = await post(
      form({ model: "m", prompt: "p", n: "2", stream: "true", size: "1024x1024" }, [
        ["image[]", MOCK_IMAGES.jpeg],
        ["image[]", MOCK_IMAGES.png],
        ["image[]", MOCK_IMAGES.webp],
        ["mask", MOCK_IMAGES.png, "mask.png"],
      ]),
    );
    expect(answer.status).toBe(200);
    expect(answer.body.value).toEqual({
      model: "m",
      prompt: "p",
      n: 2,
      stream: true,
      size: "1024x1024",
      images: [dataUri("image/jpeg", MOCK_IMAGES.jpeg), PNG_URI, dataUri("image/webp", MOCK_IMAGES.webp)],
      mask: PNG_URI,
    });
  });

  it("takes image repeated, and sniffs the bytes whatever the part declares", async () => {
    const body = new FormData();
    body.append("model", "m");
    body.append("image", new Blob([MOCK_IMAGES.png], { type: "image/jpeg" }), "a.jpg");
    body.append("image", new Blob([MOCK_IMAGES.webp], { type: "text/plain" }), "b.txt");
    const answer = await post(body);
    expect(answer.body.value?.images).toEqual([PNG_URI, dataUri("image/webp", MOCK_IMAGES.webp)]);
  });

  it("takes an image part without a filename, and leaves a field sent twice a list for the schema to refuse", async () => {
    const body = raw([text("model", "a"), text("model", "b"), [['Content-Disposition: form-data; name="image"'], MOCK_IMAGES.png]]);
    const answer = await post(body, multipart);
    expect(answer.status).toBe(200);
    expect(answer.body.value).toEqual({ model: ["a", "b"], images: [PNG_URI] });
  });

  it("reads what the official OpenAI SDK sends (image[] files from toFile, numbers as text)", async () => {
    const client = new OpenAI({ apiKey: "test", baseURL: server.url, maxRetries: 0 });
    const answer: unknown = await client.images.edit({
      model: "gpt-image-1",
      prompt: "p",
      image: [await toFile(MOCK_IMAGES.png, "a.png", { type: "image/png" }), await toFile(MOCK_IMAGES.jpeg, "b.jpg")],
      mask: await toFile(MOCK_IMAGES.png, "mask.png"),
      n: 2,
    });
    expect(answer).toEqual({
      value: { model: "gpt-image-1", prompt: "p", n: 2, images: [PNG_URI, dataUri("image/jpeg", MOCK_IMAGES.jpeg)], mask: PNG_URI },
      text: "",
    });
  });

  it("is read the same in process (app.request), where there is no Node stream", async () => {
    const res = await app().request("/edit", { method: "POST", body: form({ model: "m" }, [["image", MOCK_IMAGES.png]]) });
    expect(await res.json()).toEqual({ value: { model: "m", images: [PNG_URI] }, text: "" });
    const bad = await app().request("/edit", { method: "POST", body: form({}, [["image", Buffer.from("text")]]) });
    expect(bad.status).toBe(400);
  });

  it("gets 100 Continue when it sends Expect: 100-continue", async () => {
    const answer = await nodePost(
      `${server.url}/edit`,
      multipart,
      raw([[['Content-Disposition: form-data; name="image"; filename="x"'], MOCK_IMAGES.png]]),
      "expect",
    );
    expect(answer.continued).toBe(true);
    expect(answer.status).toBe(200);
  });
});

describe("files refused", () => {
  it("refuses a text file as an image, naming image", async () => {
    const answer = await post(
      form({ model: "m" }, [
        ["image[]", MOCK_IMAGES.png],
        ["image[]", Buffer.from("just some text\n")],
      ]),
    );
    expectError(answer, 400, "invalid_value", "image");
    expect(answer.body.error?.message).toBe("Image 2 is not an image; only PNG, JPEG and WebP images are taken.");
  });

  it("refuses a GIF and a BMP, which OpenAI does not take, and a mask that is not an image", async () => {
    const gif = await post(form({}, [["image", MOCK_IMAGES.gif]]));
    expectError(gif, 400, "invalid_value", "image");
    expect(gif.body.error?.message).toBe("Image 1 is of type image/gif; only PNG, JPEG and WebP images are taken.");
    expectError(await post(form({}, [["image", MOCK_IMAGES.bmp]])), 400, "invalid_value", "image");
    expectError(
      await post(
        form({}, [
          ["image", MOCK_IMAGES.png],
          ["mask", Buffer.from("<svg/>")],
        ]),
      ),
      400,
      "invalid_value",
      "mask",
    );
  });

  it("refuses an empty image file", async () => {
    expectError(await post(form({}, [["image", Buffer.alloc(0)]])), 400, "invalid_value", "image");
  });

  it("refuses a 17th image and a second mask", async () => {
    const files: [string, Buffer][] = Array.from({ length: 17 }, () => ["image[]", MOCK_IMAGES.png]);
    const many = await post(form({}, files));
    expectError(many, 400, "invalid_value", "image");
    expect(many.body.error?.message).toBe("An edit takes at most 16 images.");
    const sixteen = await post(form({}, files.slice(1)));
    expect(sixteen.body.value?.images).toHaveLength(16);
    expectError(
      await post(
        form({}, [
          ["image", MOCK_IMAGES.png],
          ["mask", MOCK_IMAGES.png],
          ["mask", MOCK_IMAGES.png],
        ]),
      ),
      400,
      "invalid_value",
      "mask",
    );
  });

  it("refuses a file under another name, naming it", async () => {
    const answer = await post(
      form({}, [
        ["image", MOCK_IMAGES.png],
        ["picture", MOCK_IMAGES.png],
      ]),
    );
    expectError(answer, 400, "invalid_value", "picture");
  });

  it("refuses a form without an image file", async () => {
    expectError(await post(form({ model: "m", prompt: "p" }, [])), 400, "invalid_value", "image");
  });

  it("refuses more than 50 text fields", async () => {
    const fields = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`f${i}`, "x"]));
    expectError(await post(form(fields, [["image", MOCK_IMAGES.png]])), 400, "invalid_request", null);
  });

  it("answers a refused first file while the client is still sending the rest, and closes the connection", async () => {
    const body = raw([
      [['Content-Disposition: form-data; name="image"; filename="a.txt"'], "not an image"],
      [['Content-Disposition: form-data; name="image"; filename="b.png"'], Buffer.alloc(LIMIT / 2)],
    ]);
    const answer = await nodePost(`${server.url}/edit`, multipart, body, "length");
    expect(answer.error).toBeUndefined();
    expect(answer.status).toBe(400);
    expect(answer.headers.connection).toBe("close");
    expect(JSON.parse(answer.text).error).toMatchObject({ param: "image" });
  });
});

describe("malformed multipart", () => {
  const cases: [string, Record<string, string>, Buffer][] = [
    ["no boundary", { "content-type": "multipart/form-data" }, raw([text("model", "m")])],
    ["an empty boundary", { "content-type": "multipart/form-data; boundary=" }, raw([text("model", "m")])],
    [
      "a boundary too long to search for",
      { "content-type": `multipart/form-data; boundary=${"b".repeat(300)}` },
      raw([text("model", "m")]),
    ],
    ["a body cut short", multipart, raw([text("model", "m"), [['Content-Disposition: form-data; name="image"'], MOCK_IMAGES.png]], false)],
    ["a body with no delimiter at all", multipart, Buffer.from("hello")],
    ["an empty body", multipart, Buffer.alloc(0)],
    ["a part without a name", multipart, raw([[["Content-Disposition: form-data"], "m"]])],
    ["a file part without a name", multipart, raw([[['Content-Disposition: form-data; filename="a.png"'], MOCK_IMAGES.png]])],
    ["headers cut short", multipart, Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-da`)],
  ];

  it.each(cases)("answers 400 for %s", async (_name, headers, body) => {
    const answer = await post(body, headers);
    expectError(answer, 400, "invalid_request", null);
    expect(answer.body.error?.message).toMatch(/^The multipart body is malformed: /);
  });

  it("says what is wrong with the boundary", async () => {
    const answer = await post(raw([text("model", "m")]), { "content-type": "multipart/form-data" });
    expect(answer.body.error?.message).toBe("The multipart body is malformed: the Content-Type has no usable boundary.");
    const cut = await post(raw([text("model", "m")], false), multipart);
    expect(cut.body.error?.message).toBe("The multipart body is malformed: Unexpected end of multipart data.");
  });

  it("skips a part without a Content-Disposition (busboy does), so an image in one is missing: 400", async () => {
    const answer = await post(raw([[["no colon here", "X-Other: 1"], MOCK_IMAGES.png]]), multipart);
    expectError(answer, 400, "invalid_value", "image");
  });
});

describe("the cap, the budget and the content type", () => {
  it("refuses a body over the cap with 413 and closes the connection", async () => {
    const answer = await post(form({}, [["image", Buffer.alloc(LIMIT)]]));
    expectError(answer, 413, "request_too_large", null);
    expect(answer.headers.get("connection")).toBe("close");
  });

  it("refuses a chunked body over the cap as it passes it", async () => {
    const answer = await nodePost(
      `${server.url}/edit`,
      multipart,
      raw([[['Content-Disposition: form-data; name="image"'], Buffer.alloc(LIMIT)]]),
      "chunked",
    );
    expect(answer.status).toBe(413);
  });

  it("refuses a body the budget cannot hold with 503", async () => {
    const body = raw([[['Content-Disposition: form-data; name="image"'], Buffer.alloc(2 * BUDGET)]]);
    for (const mode of ["length", "chunked"] as const) {
      const answer = await nodePost(`${tight.url}/edit`, multipart, body, mode);
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.text).error.code).toBe("body_budget_exhausted");
    }
    const small = await post(form({}, [["image", MOCK_IMAGES.png]]), {}, tight.url);
    expect(small.status).toBe(200);
  });

  it("reads a JSON body as the other routes do", async () => {
    const json = JSON.stringify({ model: "m", images: ["https://example.test/a.png"] });
    const answer = await post(json, { "content-type": "application/json" });
    expect(answer.body).toEqual({ value: JSON.parse(json), text: json });
  });

  it("refuses another content type with 415", async () => {
    const answer = await post("model=m", { "content-type": "application/x-www-form-urlencoded" });
    expectError(answer, 415, "unsupported_media_type", null);
    expect(answer.body.error?.message).toBe("Content-Type must be application/json or multipart/form-data.");
  });
});

describe("a client that leaves mid-body", () => {
  it("is client_closed_request, and the gateway serves on", async () => {
    const started = new Promise<void>((resolve) => (reading = resolve));
    const thrown = new Promise<unknown>((resolve) => (lastThrown = resolve));
    const part = raw([text("model", "m"), [['Content-Disposition: form-data; name="image"'], MOCK_IMAGES.png]], false);
    const socket = net.connect(server.port, "127.0.0.1");
    socket.on("error", () => {});
    socket.write(`POST /edit HTTP/1.1\r\nHost: test\r\nContent-Type: ${multipart["content-type"]}\r\nContent-Length: ${LIMIT}\r\n\r\n`);
    socket.write(part);
    // Its body half sent, the client leaves once the read is under way.
    await started;
    socket.destroy();
    const err = await thrown;
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe("client_closed_request");
    expect((await post(form({}, [["image", MOCK_IMAGES.png]]))).status).toBe(200);
  });
});
