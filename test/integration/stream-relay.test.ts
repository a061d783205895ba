import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { countLogWrites, deltaText, settled } from "../helpers/metering-checks.js";
import { sseAnswer, startRecordingUpstream, type RecordingUpstream } from "../helpers/recording-upstream.js";
import { sseEvents } from "../helpers/sse-frames.js";

// The relay under a client that does not keep up: a stream of several megabytes, far more than the sockets
// and buffers between the upstream and the client hold, reaches a client that stops reading for a while.
// The relay pauses the upstream read while the client's buffer is full and resumes it on drain; nothing may
// be lost, reordered or settled twice.

const CHUNKS = 20_000;
const usage = { prompt_tokens: 7, completion_tokens: CHUNKS, total_tokens: 7 + CHUNKS };
const chunk = (fields: object) =>
  `data: ${JSON.stringify({ id: "chatcmpl-big", object: "chat.completion.chunk", created: 1, model: "up-big", ...fields })}\n\n`;

let upstream: RecordingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  const parts = [chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] })];
  for (let i = 0; i < CHUNKS; i++) parts.push(chunk({ choices: [{ index: 0, delta: { content: `w${i} ` }, finish_reason: null }] }));
  parts.push(chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }), chunk({ choices: [], usage }), "data: [DONE]\n\n");
  upstream.answers = [sseAnswer(parts.join(""))];
  gw = await startTestGateway({
    config: {
      providers: { big: { protocol: "openai", base_url: `${upstream.url}/v1` } },
      models: { big: { kind: "chat", upstream: "up-big", targets: ["big"] } },
      plans: { basic: { daily_tokens: 10_000_000, context_limit: 100_000 } },
      default_plan: "basic",
    },
  });
  countLogWrites(gw);
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe("stream relay", () => {
  it("relays a stream of megabytes to a client that stops reading, whole, in order, settled once", async () => {
    const user = await gw.services.auth.users.create({ email: "slow@example.test", password: "password-123", plan: "basic" });
    const { key } = await gw.services.auth.apiKeys.create({ user: "slow@example.test" });
    // No max_tokens: each chunk is several tokens, and a limit would end the stream at its cap (test/security/13-*).
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "big", messages: [{ role: "user", content: "Say a lot" }], stream: true }),
    });
    expect(res.status).toBe(200);
    const next = sseEvents(res);
    expect((await next())?.data).toContain('"role":"assistant"');
    // The client stops reading while megabytes are on their way.
    await sleep(300);
    let text = "";
    let events = 1;
    let last: string | null = null;
    for (let event = await next(); event !== null; event = await next()) {
      const { data } = event;
      events++;
      last = data;
      if (data !== "[DONE]") {
        expect(data).toContain('"model":"big"');
        text += deltaText(data);
      }
    }
    expect(last).toBe("[DONE]");
    // Role, the deltas, the finish chunk and [DONE]; the usage chunk the client did not ask for is held back.
    expect(events).toBe(CHUNKS + 3);
    expect(text).toBe(Array.from({ length: CHUNKS }, (_, i) => `w${i} `).join(""));
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ status: 200, usage_source: "upstream", input_tokens: 7, output_tokens: CHUNKS, streamed: true });
    expect(s.hold.status).toBe("posted");
  });
});
