import { describe, expect, it } from "vitest";
import { chatImageSlots, deliverChatImages } from "../../src/providers/upstream-images/chat-images.js";
import { ImageDeliveryError } from "../../src/providers/upstream-images/image-delivery.js";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { UpstreamError } from "../../src/providers/types.js";
import { UpstreamAbort } from "../../src/providers/upstream-abort.js";
import { downloader } from "../helpers/image-download.js";

const b64 = (bytes: Buffer) => bytes.toString("base64");
const dataUri = (bytes: Buffer, type = "image/png") => `data:${type};base64,${b64(bytes)}`;
const noDownload = downloader(() => Promise.reject(new Error("no download expected")));
const imageItem = (url: unknown) => ({ type: "image_url", image_url: { url } });
const answer = (message: Record<string, unknown>) => ({ choices: [{ index: 0, message, finish_reason: "stop" }] });

/** Delivers the images of a JSON answer in place; the error when refused. */
async function deliver(body: { choices: unknown }, download = noDownload, upstream = new UpstreamAbort()) {
  const slots = chatImageSlots(body.choices, "message");
  expect(slots).not.toBeNull();
  return deliverChatImages(slots!, download, upstream).then(
    () => null,
    (err: unknown) => err,
  );
}

describe("chatImageSlots", () => {
  it.each([
    ["a text answer", answer({ role: "assistant", content: "hi" })],
    ["a tool call", answer({ role: "assistant", content: null, tool_calls: [] })],
    ["text parts only", answer({ role: "assistant", content: [{ type: "text", text: "hi" }] })],
    ["no choices", { choices: [] }],
    ["choices that are not a list", { choices: "x" }],
    ["a choice without message", { choices: [null, { index: 0 }] }],
  ])("finds nothing in %s", (_, body) => {
    expect(chatImageSlots(body.choices, "message")).toBeNull();
  });

  it("finds `images` items and `image_url` content parts of every choice, and stream deltas", () => {
    const body = {
      choices: [
        { message: { images: [imageItem("a"), { type: "image_url", image_url: "b" }] } },
        { message: { content: [{ type: "text", text: "x" }, imageItem("c")] } },
      ],
    };
    expect(chatImageSlots(body.choices, "message")!.map((s) => s.url)).toEqual(["a", "b", "c"]);
    expect(chatImageSlots([{ delta: { images: [imageItem("d")] } }], "delta")!.map((s) => s.url)).toEqual(["d"]);
    expect(chatImageSlots([{ delta: { images: [imageItem("d")] } }], "message")).toBeNull();
  });
});

describe("deliverChatImages", () => {
  it("replaces each link in place with a data: URI typed by the bytes, whatever the link declared", async () => {
    const body = answer({
      role: "assistant",
      content: [{ type: "text", text: "look" }, imageItem(dataUri(MOCK_IMAGES.gif, "image/png"))],
      images: [imageItem("https://images.example.com/a.png?sig=secret"), { type: "image_url", image_url: dataUri(MOCK_IMAGES.webp) }],
    });
    const asked: string[] = [];
    const download = downloader((url) => {
      asked.push(url);
      return Promise.resolve({ bytes: MOCK_IMAGES.jpeg, contentType: "image/png" });
    });
    expect(await deliver(body, download)).toBeNull();
    expect(asked).toEqual(["https://images.example.com/a.png?sig=secret"]);
    expect(body).toEqual(
      answer({
        role: "assistant",
        content: [{ type: "text", text: "look" }, imageItem(dataUri(MOCK_IMAGES.gif, "image/gif"))],
        images: [
          imageItem(dataUri(MOCK_IMAGES.jpeg, "image/jpeg")),
          { type: "image_url", image_url: dataUri(MOCK_IMAGES.webp, "image/webp") },
        ],
      }),
    );
    expect(JSON.stringify(body)).not.toContain("images.example.com");
  });

  it.each([
    ["invalid base64", imageItem(`data:image/png;base64,%%${b64(MOCK_IMAGES.png)}`), "invalid_base64"],
    ["bytes that are not an image", imageItem(dataUri(Buffer.from("not an image"))), "not_an_image"],
    ["a BMP", imageItem(dataUri(MOCK_IMAGES.bmp)), "unsupported_type"],
    ["an SVG", imageItem(dataUri(MOCK_IMAGES.svg)), "not_an_image"],
    ["a link of another scheme", imageItem("ftp://example.com/a.png"), "unsupported_url"],
    ["an item without a link", { type: "image_url" }, "no_image"],
    ["an item that is no object", "https://example.com/a.png", "no_image"],
  ])("refuses %s as invalid output", async (_, item, reason) => {
    const body = answer({ role: "assistant", content: "x", images: [imageItem(dataUri(MOCK_IMAGES.png)), item] });
    const err = await deliver(body);
    expect(err).toBeInstanceOf(ImageDeliveryError);
    expect((err as ImageDeliveryError).reason).toBe(reason);
    expect((err as UpstreamError).failure).toBe("invalid_output");
  });

  it("a failed download refuses the answer and stops the other downloads", async () => {
    const signals: AbortSignal[] = [];
    const download = downloader((url, signal) => {
      signals.push(signal);
      if (url.includes("bad")) return Promise.reject(new Error("404 at https://images.example.com/bad.png"));
      return new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted"))));
    });
    const body = answer({ images: [imageItem("https://images.example.com/slow.png"), imageItem("https://images.example.com/bad.png")] });
    const err = await deliver(body, download);
    expect((err as ImageDeliveryError).reason).toBe("download_failed");
    expect((err as Error).message).not.toContain("example.com");
    expect(signals.every((s) => s.aborted)).toBe(true);
  });

  it("a client that leaves during a download aborts it: `aborted`, not the upstream's fault", async () => {
    const upstream = new UpstreamAbort();
    const download = downloader(
      (_, signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))),
    );
    const pending = deliver(answer({ images: [imageItem("https://images.example.com/a.png")] }), download, upstream);
    upstream.abort();
    const err = await pending;
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).not.toBeInstanceOf(ImageDeliveryError);
    expect((err as UpstreamError).failure).toBe("aborted");
    expect(upstream.listenerCount("abort")).toBe(0);
  });
});
