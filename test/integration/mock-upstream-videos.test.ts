import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { mockVideoBytes } from "../../src/mock-upstream/openai-videos.js";
import { type MockUpstream, startMockUpstream } from "../../src/mock-upstream/server.js";
import { postJson } from "../helpers/mock-upstream-client.js";
import { validateOpenAI } from "../helpers/openapi.js";

// The mock's OpenAI video API (docs/mock-upstream.md, "OpenAI videos"), driven by the official SDK's `videos`
// resource and by raw requests: every job it answers is a valid `VideoResource` of the reference, bad input is
// OpenAI's error envelope, and the faults a gateway test needs (failed, never ending, not a video, gone) hold.

const API_KEY = "sk-mock-test";
let mock: MockUpstream;
let client: OpenAI;

beforeAll(async () => {
  mock = await startMockUpstream({ port: 0, apiKey: API_KEY });
  client = new OpenAI({ apiKey: API_KEY, baseURL: mock.baseUrl, maxRetries: 0 });
});
afterAll(async () => {
  await mock.close();
});

const auth = { authorization: `Bearer ${API_KEY}` };
const create = (body: object, headers: Record<string, string> = {}) => postJson(`${mock.baseUrl}/videos`, body, { ...auth, ...headers });

/** The job, checked against the reference's `VideoResource`. */
function valid<T>(job: T): T {
  expect(validateOpenAI("VideoResource", job)).toEqual([]);
  return job;
}

async function errorOf(res: Response): Promise<{ param: string | null; code: string | null; message: string; type: string }> {
  const body = (await res.json()) as { error: { param: string | null; code: string | null; message: string; type: string } };
  expect(validateOpenAI("ErrorResponse", body)).toEqual([]);
  return body.error;
}

describe("mock upstream: OpenAI videos through the SDK", () => {
  it("creates (multipart), retrieves step by step and downloads the video", async () => {
    const created = valid(await client.videos.create({ model: "sora-2", prompt: "a calico cat", seconds: "8", size: "1280x720" }));
    expect(created).toMatchObject({ object: "video", status: "queued", progress: 0, seconds: "8", size: "1280x720", completed_at: null });
    const running = valid(await client.videos.retrieve(created.id));
    expect(running).toMatchObject({ status: "in_progress", completed_at: null });
    expect(running.progress).toBeGreaterThan(0);
    const done = valid(await client.videos.retrieve(created.id));
    expect(done).toMatchObject({ status: "completed", progress: 100, seconds: "8", error: null });
    expect(done.expires_at).toBeGreaterThan(done.completed_at!);

    const content = await client.videos.downloadContent(created.id);
    expect(content.headers.get("content-type")).toBe("video/mp4");
    const bytes = Buffer.from(await content.arrayBuffer());
    expect(bytes.equals(mockVideoBytes(created.id))).toBe(true);
    expect(bytes.subarray(4, 8).toString("latin1")).toBe("ftyp");

    const thumbnail = await client.videos.downloadContent(created.id, { variant: "thumbnail" });
    expect(thumbnail.headers.get("content-type")).toBe("image/webp");
    expect(Buffer.from(await thumbnail.arrayBuffer()).equals(MOCK_IMAGES.webp)).toBe(true);
  });

  it("takes a reference image as an upload or as an image_url, defaulting seconds and size", async () => {
    const upload = await client.videos.create({ prompt: "a cat", input_reference: await toFile(MOCK_IMAGES.png, "ref.png") });
    expect(valid(upload)).toMatchObject({ model: "sora-2", seconds: "4", size: "720x1280" });
    const byUrl = await client.videos.create({ prompt: "a cat", input_reference: { image_url: "https://example.test/cat.png" } });
    valid(byUrl);
  });

  it("refuses an unknown id, and content asked for before the job completed", async () => {
    await expect(client.videos.retrieve("video_missing")).rejects.toMatchObject({ status: 404 });
    const created = await client.videos.create({ prompt: "a cat" });
    await expect(client.videos.downloadContent(created.id)).rejects.toMatchObject({ status: 400 });
  });
});

describe("mock upstream: OpenAI video requests", () => {
  it("takes the JSON body (CreateVideoJsonBody) too", async () => {
    const res = await create({
      model: "sora-2-pro",
      prompt: "waves",
      seconds: "12",
      size: "1792x1024",
      input_reference: { image_url: "data:image/png;base64,AAAA" },
    });
    expect(res.status).toBe(200);
    expect(valid(await res.json())).toMatchObject({ model: "sora-2-pro", seconds: "12", size: "1792x1024" });
  });

  it.each([
    [{ prompt: "x", seconds: "5" }, "seconds"],
    [{ prompt: "x", seconds: 4 }, "seconds"],
    [{ prompt: "x", size: "1920x1080" }, "size"],
    [{ seconds: "4" }, "prompt"],
    [{ prompt: "" }, "prompt"],
    [{ prompt: "x", duration: 4 }, "duration"],
    [{ prompt: "x", input_reference: { image_url: "https://a.test/x.png", file_id: "file-1" } }, "input_reference"],
    [{ prompt: "x", input_reference: { image_url: "not a url" } }, "input_reference.image_url"],
  ])("refuses %j with OpenAI's 400 naming %s", async (body, param) => {
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ type: "invalid_request_error", param });
  });

  it("requires the key for the job and its content", async () => {
    const created = valid(await client.videos.create({ prompt: "a cat" }));
    for (const path of [`/videos/${created.id}`, `/videos/${created.id}/content`]) {
      const res = await fetch(`${mock.baseUrl}${path}`);
      expect(res.status).toBe(401);
    }
  });

  it("refuses a variant the reference does not name", async () => {
    const created = valid(await client.videos.create({ prompt: "a cat" }));
    await client.videos.retrieve(created.id);
    await client.videos.retrieve(created.id);
    const res = await fetch(`${mock.baseUrl}/videos/${created.id}/content?variant=poster`, { headers: auth });
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ param: "variant" });
  });
});

describe("mock upstream: OpenAI video faults", () => {
  /** A job created with `fault` (header, or marker in the prompt), polled `polls` times. */
  async function faulty(how: "header" | "prompt", fault: string, polls = 2) {
    const res =
      how === "header" ? await create({ prompt: "a cat" }, { "x-mock-video": fault }) : await create({ prompt: `a cat [mock:${fault}]` });
    const { id } = valid((await res.json()) as { id: string });
    let job = valid(await client.videos.retrieve(id));
    for (let i = 1; i < polls; i++) job = valid(await client.videos.retrieve(id));
    return job;
  }

  it.each(["header", "prompt"] as const)("fails a job by %s, with an error {code, message}", async (how) => {
    const job = await faulty(how, "fail");
    expect(job).toMatchObject({ status: "failed", error: { code: expect.any(String), message: expect.any(String) } });
    expect(job.completed_at).not.toBeNull();
  });

  it("keeps a job in progress for ever", async () => {
    const job = await faulty("header", "never", 6);
    expect(job.status).toBe("in_progress");
    expect(job.progress).toBeLessThan(100);
  });

  it("serves content that is not a video, and content that is gone", async () => {
    const notVideo = await faulty("prompt", "not-video");
    const page = await fetch(`${mock.baseUrl}/videos/${notVideo.id}/content`, { headers: auth });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const gone = await faulty("header", "gone");
    expect(gone.status).toBe("completed");
    await expect(client.videos.downloadContent(gone.id)).rejects.toMatchObject({ status: 404 });
  });
});
