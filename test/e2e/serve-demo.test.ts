import { classifyImageUsage, nativeImageQuota } from "../../src/billing/image-quota.js";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { validateOpenAI } from "../helpers/openapi.js";
import { gateway, isAlive, postmasterPid, processesMentioning, startServe, tempDir, type ServeProcess } from "../helpers/cli.js";
import { logIn } from "../helpers/login.js";

// The newcomer's path: `gateway serve --demo` on a fresh data dir, embedded PostgreSQL, no DATABASE_URL.
describe("gateway serve --demo", () => {
  const running: ServeProcess[] = [];
  let workdir: Awaited<ReturnType<typeof tempDir>>;

  afterAll(async () => {
    for (const s of running) if (s.proc.exitCode === null) s.proc.kill("SIGKILL");
    if (workdir) {
      for (const pid of processesMentioning(workdir.dir)) process.kill(pid, "SIGKILL");
      await workdir.remove();
    }
  });

  async function start(dataDir: string) {
    const serve = startServe(["--demo", "--port", "0", "--data-dir", dataDir], { cwd: workdir.dir });
    running.push(serve);
    const [, url] = await serve.waitFor(/ready at (http:\/\/\S+)/);
    const [, key] = await serve.waitFor(/API key:\s+(\S+)/);
    const [curl] = await serve.waitFor(/curl -s \S+\/v1\/models -H "Authorization: Bearer \S+"/);
    return { serve, url: url!, key: key!, curl: curl! };
  }

  it("starts on a fresh data dir, answers with the printed key, and leaves no postgres behind on SIGTERM", async () => {
    workdir = await tempDir("gateway-e2e-demo-");
    const dataDir = `${workdir.dir}/data`;
    const first = await start(dataDir);
    expect(first.curl).toContain(first.key);

    const res = await fetch(`${first.url}/v1/models`, { headers: { Authorization: `Bearer ${first.key}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    const body = (await res.json()) as { object: string; data: { id: string; object: string }[] };
    expect(validateOpenAI("ListModelsResponse", body)).toEqual([]);
    const demoModels = [
      "demo-small",
      "demo-large",
      "demo-broken",
      "demo-embed",
      "demo-image",
      "demo-gemini-image",
      "demo-claude",
      "demo-gemini",
      "demo-judge",
      "demo-video",
      "demo-sora",
    ];
    expect(body.data.map((m) => m.id)).toEqual(demoModels);

    // The official SDK, unmodified, pointed at the gateway.
    const sdk = new OpenAI({ apiKey: first.key, baseURL: `${first.url}/v1` });
    const listed = [];
    for await (const model of sdk.models.list()) listed.push(model.id);
    expect(listed).toEqual(demoModels);
    const wrong = new OpenAI({ apiKey: "gw_wrong", baseURL: `${first.url}/v1`, maxRetries: 0 });
    await expect(wrong.models.list()).rejects.toMatchObject({ status: 401 });

    // Chat through the real binary: JSON and a stream, metered on the embedded database.
    const messages = [{ role: "user" as const, content: "Say hello" }];
    const completion = await sdk.chat.completions.create({ model: "demo-small", messages });
    expect(completion.model).toBe("demo-small");
    expect(completion.usage!.total_tokens).toBeGreaterThan(0);
    let streamed = "";
    for await (const chunk of await sdk.chat.completions.create({ model: "demo-small", messages, stream: true })) {
      streamed += chunk.choices[0]?.delta.content ?? "";
    }
    expect(streamed).toBe(completion.choices[0]!.message.content);
    const embedded = await sdk.embeddings.create({ model: "demo-embed", input: "Say hello" });
    expect(embedded.model).toBe("demo-embed");
    expect(embedded.data[0]!.embedding.length).toBeGreaterThan(0);
    const image = await sdk.images.generate({ model: "demo-image", prompt: "a red square" });
    expect(image.data![0]!.url).toMatch(/^data:image\/png;base64,/);
    const questions = { polite: { type: "noul" }, tone: { type: "choice", criteria: { formal: null, casual: null } } };
    type Judged = { model: string; answers: Record<string, { type: string }>; usage: { input_tokens: number } };
    const judged = await sdk.post<Judged>("/systemone", { body: { model: "demo-judge", state: "Hi!", questions } });
    expect(judged.model).toBe("demo-judge");
    expect(Object.keys(judged.answers)).toEqual(["polite", "tone"]);
    const [, password] = first.serve.stderr().match(/password (\S+) \(admin\)/)!;
    const { token } = await logIn(first.url, "demo@example.com", password!);
    const quota = async () =>
      (await (await fetch(`${first.url}/api/v1/user/quota`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        used: number;
        reserved: number;
      };
    let seen = await quota();
    // `reserved` is the gateway's lease: it gives its units back after 2 s without requests (docs/billing.md).
    // The evaluation is billed on its input tokens only; the image by its native usage (gpt-image-1 is designated).
    const imageUsage = classifyImageUsage(image.usage);
    if (imageUsage.kind !== "native") throw new Error("the demo image's usage should be complete");
    const imageCharge = Number(nativeImageQuota(imageUsage.usage, { tokenMultiplier: 1, groupMultiplier: 1 }));
    const used = 2 * completion.usage!.total_tokens + embedded.usage.prompt_tokens + judged.usage.input_tokens + imageCharge;
    for (let i = 0; i < 200 && (seen.used < used || seen.reserved > 0); i++) {
      await new Promise((r) => setTimeout(r, 50));
      seen = await quota();
    }
    // Every request settled with the mock's usage (token_multiplier 1, unit ratios): nothing left reserved.
    expect(seen).toMatchObject({ used, reserved: 0 });

    // The Anthropic and Gemini SDKs, unmodified: each route natively and translated to the openai demo model.
    const anthropic = new Anthropic({ apiKey: first.key, baseURL: first.url, maxRetries: 0 });
    for (const model of ["demo-claude", "demo-small"]) {
      const message = await anthropic.messages.create({ model, max_tokens: 100, messages });
      expect(message.model).toBe(model);
      expect(message.content[0]).toMatchObject({ type: "text", text: expect.stringMatching(/^Mock reply/) });
      const streamedMessage = await anthropic.messages.stream({ model, max_tokens: 100, messages }).finalMessage();
      expect(streamedMessage.content).toEqual(message.content);
    }
    const gemini = new GoogleGenAI({ apiKey: first.key, httpOptions: { baseUrl: `${first.url}/compatible`, apiVersion: "v1beta" } });
    for (const model of ["demo-gemini", "demo-small"]) {
      const answer = await gemini.models.generateContent({ model, contents: "Say hello" });
      expect(answer.text).toMatch(/^Mock reply/);
      let text = "";
      for await (const chunk of await gemini.models.generateContentStream({ model, contents: "Say hello" })) text += chunk.text ?? "";
      expect(text).toBe(answer.text);
    }

    const unauth = await fetch(`${first.url}/v1/models`);
    expect(unauth.status).toBe(401);

    const pgPid = postmasterPid(dataDir);
    expect(isAlive(pgPid)).toBe(true);

    first.serve.proc.kill("SIGTERM");
    const result = await first.serve.proc;
    expect(result.exitCode).toBe(0);
    expect(isAlive(pgPid)).toBe(false);
    expect(processesMentioning(dataDir)).toEqual([]);

    // A second start reuses the data: no initdb, the same demo key still works. SIGINT stops it as Ctrl-C would.
    const second = await start(dataDir);
    expect(second.serve.stderr()).not.toMatch(/initialis/i);
    expect(second.key).toBe(first.key);
    const again = await fetch(`${second.url}/v1/models`, { headers: { Authorization: `Bearer ${second.key}` } });
    expect(again.status).toBe(200);

    // Admin commands attach to the running embedded database; a key revoked there is refused at once.
    const created = await gateway(["keys", "create", "--user", "demo@example.com", "--json", "--data-dir", dataDir], { cwd: workdir.dir });
    expect(created.exitCode).toBe(0);
    const key = JSON.parse(created.stdout) as { id: string; key: string };
    const auth = { headers: { Authorization: `Bearer ${key.key}` } };
    expect((await fetch(`${second.url}/v1/models`, auth)).status).toBe(200);
    const revoked = await gateway(["keys", "revoke", key.id, "--data-dir", dataDir], { cwd: workdir.dir });
    expect(revoked.exitCode).toBe(0);
    expect((await fetch(`${second.url}/v1/models`, auth)).status).toBe(401);

    // Ctrl-C under `npm start` reaches the gateway twice at once (the terminal's, then npm's forward): one drain.
    const secondPg = postmasterPid(dataDir);
    second.serve.proc.kill("SIGINT");
    await second.serve.waitFor(/draining/);
    second.serve.proc.kill("SIGINT");
    expect((await second.serve.proc).exitCode).toBe(0);
    expect(second.serve.stderr()).not.toMatch(/again/);
    expect(isAlive(secondPg)).toBe(false);
    expect(processesMentioning(dataDir)).toEqual([]);
  }, 180_000);

  it("recovers after the gateway was killed outright and its PostgreSQL survived as an orphan", async () => {
    const dataDir = `${workdir.dir}/crash`;
    const crashed = await start(dataDir);
    const orphan = postmasterPid(dataDir);
    crashed.serve.proc.kill("SIGKILL");
    await crashed.serve.proc;
    expect(isAlive(orphan)).toBe(true);

    const restarted = await start(dataDir);
    expect(isAlive(orphan)).toBe(false);
    const res = await fetch(`${restarted.url}/v1/models`, { headers: { Authorization: `Bearer ${restarted.key}` } });
    expect(res.status).toBe(200);
    restarted.serve.proc.kill("SIGTERM");
    expect((await restarted.serve.proc).exitCode).toBe(0);
    expect(processesMentioning(dataDir)).toEqual([]);
  }, 180_000);
});
