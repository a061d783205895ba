import { execa, type ResultPromise } from "execa";
import { afterAll, describe, expect, it } from "vitest";
import { readDemoCredentials } from "../../src/runtime/demo.js";
import { staffCaseDetailSchema } from "../../worker-kit/wire/staff.js";
import { userCaseDetailSchema, type userCaseDetailSchema as DetailSchema } from "../../worker-kit/wire/user-cases.js";
import { cleanEnv, gatewayBin, endWork, startServe, tempDir, type ServeProcess } from "../helpers/cli.js";
import { logIn } from "../helpers/login.js";
import type { z } from "zod";
import { openCaseOnFailedRequest } from "../helpers/demo-case.js";
import { until } from "../helpers/poll.js";

// The path end to end with the real binaries: `gateway serve --demo` opens the worker endpoints with a bot
// token of its own, `gateway worker run --demo` reads it, and a user's case on a failed request gets an answer
// drafted through the gateway's own chat route (metered on the user's demo key); staff hold the case, and
// answers publish again once they resume.

type Detail = z.infer<typeof DetailSchema>;

describe("gateway worker run --demo", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let serve: ServeProcess | undefined;
  let worker: ResultPromise | undefined;

  afterAll(() => endWork(work, worker, serve?.proc));

  it("answers a user's case on a failed request, holds off while staff hold it, and stops on SIGTERM", async () => {
    work = await tempDir("gateway-e2e-worker-");
    const dataDir = `${work.dir}/data`;
    serve = startServe(["--demo", "--port", "0", "--data-dir", dataDir], { cwd: work.dir });
    const [, url] = await serve.waitFor(/ready at (http:\/\/\S+)/);
    await serve.waitFor(new RegExp(`npx gateway worker run --demo --data-dir ${dataDir}`));
    const saved = (await readDemoCredentials(dataDir))!;
    expect(saved).toMatchObject({ url, bot_token: expect.stringMatching(/^[0-9a-f]{64}$/) });

    let out = "";
    let err = "";
    worker = execa(gatewayBin, ["worker", "run", "--demo", "--data-dir", dataDir], {
      cwd: work.dir,
      env: cleanEnv(),
      extendEnv: true,
      reject: false,
      buffer: { stdout: false, stderr: false },
    });
    worker.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
    worker.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
    const logLines = () =>
      out
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    const started = await until("the worker's start line", async () => {
      if (worker!.exitCode !== null) throw new Error(`worker exited (${worker!.exitCode}): ${err}`);
      return logLines().find((line) => line.msg === "worker started");
    });
    expect(started).toMatchObject({ url, model: "demo-small", demo: true });

    // The demo user (an admin) logs in; a chat request fails at the mock upstream, which refuses the client's own key.
    const session = await logIn(url!, saved.email, saved.password!);
    const user = { authorization: `Bearer ${session.token}`, "content-type": "application/json" };
    const staff = { ...user, "x-csrf-token": session.csrfToken };
    const opened = await openCaseOnFailedRequest(url!, saved.key, user, { locale: "de", question: "Warum schlägt meine Anfrage fehl?" });
    const requestId = opened.request_id!;
    const casePath = `${url}/api/v1/user/assistant/cases/${opened.id}`;
    const detail = async () => userCaseDetailSchema.parse(await (await fetch(casePath, { headers: user })).json());
    const assistantMessages = (d: Detail) => d.messages.filter((m) => m.role === "assistant");
    const answered = await until("the worker's answer", async () => {
      const d = await detail();
      return assistantMessages(d).length === 1 ? d : undefined;
    });

    // The worker said when it took the job and how it ended.
    const claimedLine = logLines().find((line) => line.msg === "job claimed" && line.case_id === opened.id);
    expect(claimedLine).toMatchObject({ kind: "answer", attempt: 1 });
    // Its outcome line comes once the completion's answer is back: maybe a moment after the case shows the answer.
    const outcomeLine = await until("the job's outcome line", async () =>
      logLines().find((line) => line.job_id === claimedLine!.job_id && line.outcome !== undefined),
    );
    expect(outcomeLine).toMatchObject({
      msg: "job published",
      duration_ms: expect.any(Number),
    });

    // The user reads the answer; the card and evidence restate the request's facts.
    expect(assistantMessages(answered)[0]!.content).toMatch(/^Mock reply/);
    expect(answered.evidence).toEqual([
      { id: "request", kind: "request_facts", content: answered.case.facts, created_at: expect.any(String) },
    ]);
    const card = answered.case.card!;
    expect(card.problem).toContain(requestId);
    expect(card.problem).toContain("upstream_key_rejected");
    expect(card.facts).toContainEqual(
      expect.objectContaining({ field: "status", value: 400, evidence_ids: ["request"], request_id: requestId }),
    );
    expect(card.facts).toContainEqual(expect.objectContaining({ field: "error_code", value: "upstream_key_rejected" }));
    expect(answered.usage).toMatchObject({ model_calls: 1, cost_usd: null });
    expect(answered.usage.input_tokens).toBeGreaterThan(0);

    // The worker's chat call is the demo user's request like any other: in their log, charged on their quota.
    const workerCall = await until("the worker's call in the request log", async () => {
      const res = await fetch(`${url}/api/v1/user/requests?limit=20`, { headers: user });
      const { requests } = (await res.json()) as {
        requests: {
          request_id: string;
          model: string;
          status: number;
          input_tokens: number;
          output_tokens: number;
          quota_charged: number;
        }[];
      };
      return requests.find((r) => r.request_id !== requestId && r.model === "demo-small" && r.status === 200);
    });
    expect(workerCall).toMatchObject({ input_tokens: answered.usage.input_tokens, output_tokens: answered.usage.output_tokens });
    expect(workerCall.quota_charged).toBe(answered.usage.input_tokens + answered.usage.output_tokens);
    expect(logLines()).toContainEqual(expect.objectContaining({ case_id: opened.id, kind: "answer", outcome: "published" }));

    // Staff take over: the user's next message queues a private staff draft, which the worker writes, and no
    // automatic answer reaches the transcript while the hold lasts.
    const staffPath = `${url}/api/v1/assistant/cases/${opened.id}`;
    expect((await fetch(`${staffPath}/takeover`, { method: "POST", headers: staff })).status).toBe(200);
    const held = await fetch(`${casePath}/messages`, { method: "POST", headers: user, body: JSON.stringify({ content: "Und jetzt?" }) });
    expect(held.status).toBe(201);
    const drafted = await until("the staff draft", async () => {
      const d = staffCaseDetailSchema.parse(await (await fetch(staffPath, { headers: user })).json());
      return d.drafts.some((draft) => draft.kind === "staff" && !draft.reviewed) ? d : undefined;
    });
    expect(drafted.case.staff_hold).toBe(true);
    expect(drafted.jobs.map((j) => [j.kind, j.status])).toEqual([
      ["staff_draft", "completed"],
      ["answer", "completed"],
    ]);
    expect(assistantMessages(await detail())).toHaveLength(1);

    // Resumed, the user's next message is answered automatically again.
    expect((await fetch(`${staffPath}/resume`, { method: "POST", headers: staff })).status).toBe(200);
    const after = await fetch(`${casePath}/messages`, {
      method: "POST",
      headers: user,
      body: JSON.stringify({ content: "Danke, noch etwas?" }),
    });
    expect(after.status).toBe(201);
    const resumed = await until("the answer after the resume", async () => {
      const d = await detail();
      return assistantMessages(d).length === 2 ? d : undefined;
    });
    expect(resumed.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "user", "assistant"]);

    worker.kill("SIGTERM");
    const result = await worker;
    expect(result.exitCode, err).toBe(0);
    expect(logLines().at(-1)).toMatchObject({ msg: "worker stopped" });

    serve.proc.kill("SIGTERM");
    expect((await serve.proc).exitCode).toBe(0);
  }, 180_000);
});
