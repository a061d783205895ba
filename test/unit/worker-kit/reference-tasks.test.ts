import pino from "pino";
import { describe, expect, it } from "vitest";
import { GatewayConnectionError, GatewayHttpError, isRetryable } from "../../../worker-kit/client/errors.js";
import { chatComplete, type ChatOptions } from "../../../worker-kit/reference/chat.js";
import { answerDisposition, referenceTasks } from "../../../worker-kit/reference/tasks.js";
import { PermanentTaskError, type Job, type TaskHelpers, type UsageReport } from "../../../worker-kit/runner/task.js";
import { job } from "./reference-fixtures.js";

interface Sent {
  url: string;
  headers: Record<string, string>;
  body: { model: string; messages: { role: string; content: string }[] };
  signal: AbortSignal | undefined;
}

/** A fetch that answers `status` with `body` and records what it was sent. */
function fakeFetch(status: number, body: unknown, headers: Record<string, string> = {}) {
  const sent: Sent[] = [];
  const fetch = (async (url: URL | string, init?: RequestInit) => {
    sent.push({
      url: String(url),
      headers: init!.headers as Record<string, string>,
      body: JSON.parse(init!.body as string),
      signal: init!.signal ?? undefined,
    });
    return new Response(typeof body === "string" ? body : JSON.stringify(body), {
      status,
      headers: { "x-request-id": "req_chat", ...headers },
    });
  }) as typeof globalThis.fetch;
  return { fetch, sent };
}

const completion = (content: string | null, usage: unknown = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 }) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
  usage,
});

const options = (fetch: typeof globalThis.fetch): ChatOptions => ({ url: "http://gw.test/", apiKey: "gw_key", model: "demo-small", fetch });

function helpers() {
  const usage: UsageReport[] = [];
  const controller = new AbortController();
  const h: TaskHelpers = {
    logger: pino({ level: "silent" }),
    signal: controller.signal,
    deadline: new Date("2026-01-02T03:05:00Z"),
    addUsage: (report) => usage.push(report),
  };
  return { helpers: h, usage };
}

const run = (kind: Job["kind"], fetch: typeof globalThis.fetch, context: Parameters<typeof job>[1] = {}) => {
  const task = referenceTasks(options(fetch)).find((t) => t.kind === kind)!;
  const h = helpers();
  return { result: task.run(job(kind, context) as Job, h.helpers), usage: h.usage };
};

describe("chatComplete", () => {
  it("posts the OpenAI chat shape to the gateway's own route with the inference key and the task's signal", async () => {
    const { fetch, sent } = fakeFetch(200, completion("  Hallo  "));
    const task = new AbortController();
    const answer = await chatComplete(options(fetch), [{ role: "user", content: "hi" }], task.signal);
    expect(answer).toEqual({ content: "Hallo", inputTokens: 120, outputTokens: 30 });
    expect(sent[0]!.url).toBe("http://gw.test/v1/chat/completions");
    expect(sent[0]!.headers.authorization).toBe("Bearer gw_key");
    expect(sent[0]!.body).toEqual({ model: "demo-small", messages: [{ role: "user", content: "hi" }] });
    // The call is tied to the task's signal: when the runner aborts the task, the request is aborted too.
    expect(sent[0]!.signal!.aborted).toBe(false);
    task.abort();
    expect(sent[0]!.signal!.aborted).toBe(true);
  });

  it("counts no tokens when the answer has no usage", async () => {
    const { fetch } = fakeFetch(200, completion("ok", null));
    expect(await chatComplete(options(fetch), [], new AbortController().signal)).toEqual({
      content: "ok",
      inputTokens: 0,
      outputTokens: 0,
    });
  });

  it("fails for good on a refusal (4xx other than 429), naming the gateway's code", async () => {
    const envelope = { error: { message: "Unknown model.", type: "invalid_request_error", code: "model_not_found", param: "model" } };
    const { fetch } = fakeFetch(404, envelope);
    const err = await chatComplete(options(fetch), [], new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermanentTaskError);
    expect(err).toMatchObject({ code: "chat_model_not_found", message: "the chat call was refused: 404 Unknown model." });
  });

  it("throws retryable errors on 429 and 5xx (with Retry-After) and on a failed connection", async () => {
    const limited = fakeFetch(
      429,
      { error: { message: "Slow down.", type: "requests", code: "rate_limited", param: null } },
      { "retry-after": "3" },
    );
    const err429 = await chatComplete(options(limited.fetch), [], new AbortController().signal).catch((e: unknown) => e);
    expect(err429).toBeInstanceOf(GatewayHttpError);
    expect(err429).toMatchObject({ status: 429, code: "rate_limited", retryAfterMs: 3000, requestId: "req_chat" });
    expect(isRetryable(err429)).toBe(true);

    const down = fakeFetch(502, "<html>bad gateway</html>");
    const err502 = await chatComplete(options(down.fetch), [], new AbortController().signal).catch((e: unknown) => e);
    expect(err502).toMatchObject({ status: 502, code: "http_502" });
    expect(isRetryable(err502)).toBe(true);

    const refused = (async () => {
      throw new TypeError("fetch failed");
    }) as typeof globalThis.fetch;
    const errConn = await chatComplete(options(refused), [], new AbortController().signal).catch((e: unknown) => e);
    expect(errConn).toBeInstanceOf(GatewayConnectionError);
    expect(isRetryable(errConn)).toBe(true);
  });

  it("passes an abort through as it is, not as a connection error", async () => {
    const controller = new AbortController();
    const aborting = (async () => {
      controller.abort();
      throw new DOMException("aborted", "AbortError");
    }) as typeof globalThis.fetch;
    const err = await chatComplete(options(aborting), [], controller.signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DOMException);
  });

  it("fails for good on a success that is no chat completion", async () => {
    const { fetch } = fakeFetch(200, { nope: true });
    await expect(chatComplete(options(fetch), [], new AbortController().signal)).rejects.toMatchObject({ code: "chat_unexpected_answer" });
  });
});

describe("answerDisposition", () => {
  it("hands the case to staff when the model answers the marker alone or nothing", () => {
    expect(answerDisposition("NEEDS_STAFF")).toBe("needs_staff");
    expect(answerDisposition(" needs_staff. ")).toBe("needs_staff");
    expect(answerDisposition("")).toBe("needs_staff");
    expect(answerDisposition("The upstream failed; retry in a minute.")).toBe("answer");
    expect(answerDisposition("If this persists, NEEDS_STAFF may help.")).toBe("answer");
  });
});

describe("referenceTasks", () => {
  it("has a task for every job kind", () => {
    expect(referenceTasks(options(fakeFetch(200, {}).fetch)).map((t) => t.kind)).toEqual([
      "answer",
      "staff_draft",
      "operator_draft",
      "bug_draft",
    ]);
  });

  it("answers with the model's words, the card and evidence of the facts, and one call's usage at an unknown cost", async () => {
    const { fetch, sent } = fakeFetch(200, completion("Der Anbieter ist gestört; bitte später erneut versuchen."));
    const { result, usage } = run("answer", fetch);
    const answer = await result;
    expect(answer).toMatchObject({ content: "Der Anbieter ist gestört; bitte später erneut versuchen.", disposition: "answer" });
    expect(answer.card!.facts[0]!.evidence_ids).toEqual(["request"]);
    expect(answer.evidence.map((e) => e.id)).toEqual(["request"]);
    expect(usage).toEqual([{ model_calls: 1, input_tokens: 120, output_tokens: 30, cost_usd: null }]);
    expect(sent[0]!.body.messages[0]!.content).toContain('the locale "de"');
  });

  it("completes an answer the model cannot give as needs_staff, without content", async () => {
    const { result } = run("answer", fakeFetch(200, completion("NEEDS_STAFF")).fetch);
    expect(await result).toMatchObject({ content: "", disposition: "needs_staff" });
  });

  it("drafts for staff without a card or evidence", async () => {
    for (const kind of ["staff_draft", "operator_draft", "bug_draft"] as const) {
      const { result, usage } = run(kind, fakeFetch(200, completion("Draft text")).fetch);
      expect(await result).toEqual({ content: "Draft text", card: null, evidence: [], disposition: "answer" });
      expect(usage).toHaveLength(1);
    }
    const empty = run("bug_draft", fakeFetch(200, completion(null)).fetch);
    expect(await empty.result).toMatchObject({ content: "", disposition: "no_answer" });
  });

  it("reports no usage when the call was refused", async () => {
    const { result, usage } = run(
      "answer",
      fakeFetch(403, { error: { message: "No.", type: "x", code: "model_not_allowed", param: null } }).fetch,
    );
    await expect(result).rejects.toBeInstanceOf(PermanentTaskError);
    expect(usage).toEqual([]);
  });
});
