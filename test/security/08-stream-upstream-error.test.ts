import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { countLogWrites, deltaText, settled } from "../helpers/metering-checks.js";
import { sseAnswer, startRecordingUpstream, type RecordingUpstream } from "../helpers/recording-upstream.js";

// Issue 20, item 8: an upstream's error event mid-stream carries its own text (here an internal host name). The
// client gets the gateway's own in-band error instead, the request log its code, and the stream is billed for
// what was delivered.

const SECRET = "gpu-node-07.internal.corp-secret.example";
const chatChunk = (delta: object) =>
  `data: ${JSON.stringify({ id: "chatcmpl-x", object: "chat.completion.chunk", created: 1, model: "up", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
const chatError = `data: ${JSON.stringify({ error: { message: `backend ${SECRET}:8443 failed`, type: "server_error", param: null, code: "internal_error" } })}\n\n`;
const typed = (data: Record<string, unknown>) => `event: ${data.type as string}\ndata: ${JSON.stringify(data)}\n\n`;
const responseObject = { id: "resp_x", object: "response", created_at: 1, model: "up", status: "in_progress", output: [] };
const responsesOpening = [
  typed({ type: "response.created", sequence_number: 0, response: responseObject }),
  typed({
    type: "response.output_text.delta",
    sequence_number: 1,
    item_id: "msg_x",
    output_index: 0,
    content_index: 0,
    delta: "Hello there",
  }),
];

let upstream: RecordingUpstream;
let gw: TestGateway;
let seq = 0;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway({
    config: {
      providers: { up: { protocol: "openai", base_url: `${upstream.url}/v1` } },
      models: { m: { kind: "chat", upstream: "up", targets: ["up"] } },
    },
  });
  countLogWrites(gw);
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

async function post(path: string, body: object) {
  const user = await gw.services.auth.users.create({ email: `err-${++seq}@example.test`, password: "password-123456" });
  const { key } = await gw.services.auth.apiKeys.create({ user: user.id });
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { res, text: await res.text(), userId: user.id };
}

describe("an upstream error event mid-stream (issue 20, item 8)", () => {
  it("/v1/chat/completions: the gateway's error event, never the upstream's text; billed for what was delivered", async () => {
    upstream.answers = [sseAnswer(chatChunk({ role: "assistant", content: "" }) + chatChunk({ content: "Hello there" }) + chatError)];
    const { res, text, userId } = await post("/v1/chat/completions", {
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    expect(res.status).toBe(200);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain("internal_error");
    const frames = text.split("\n\n").filter(Boolean);
    expect(frames.map((f) => deltaText(f.slice("data: ".length))).join("")).toContain("Hello there");
    const last = JSON.parse(frames.at(-1)!.slice("data: ".length)) as { error: Record<string, unknown> };
    expect(last.error).toMatchObject({ code: "upstream_stream_interrupted", request_id: res.headers.get("x-request-id") });
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({ status: 200, error_code: "upstream_stream_interrupted" });
    expect(JSON.stringify(s.log)).not.toContain(SECRET);
    expect(Number(s.log.output_tokens)).toBeGreaterThan(0);
  });

  for (const [name, failure] of [
    ["error", { type: "error", sequence_number: 2, code: "server_error", message: `backend ${SECRET} failed`, param: null }],
    [
      "response.failed",
      {
        type: "response.failed",
        sequence_number: 2,
        response: { ...responseObject, status: "failed", error: { code: "server_error", message: `backend ${SECRET} failed` } },
      },
    ],
  ] as const) {
    it(`/v1/responses: an upstream \`${name}\` event becomes the gateway's error event`, async () => {
      upstream.answers = [sseAnswer(responsesOpening.join("") + typed(failure))];
      const { res, text, userId } = await post("/v1/responses", { model: "m", input: "hi", stream: true });
      expect(res.status).toBe(200);
      expect(text).not.toContain(SECRET);
      expect(text).toContain("Hello there");
      expect(text.trimEnd().split("\n\n").at(-1)).toContain('"code":"upstream_stream_interrupted"');
      const s = await settled([gw], userId);
      expect(s.log).toMatchObject({ status: 200, error_code: "upstream_stream_interrupted" });
    });
  }
});
