import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { resolvePassword } from "../../cli/password.js";

/** A terminal: raw mode is recorded, what the user types arrives as data. */
function terminal() {
  const input = Object.assign(new PassThrough(), { isTTY: true, raw: [] as boolean[] });
  const setRawMode = (raw: boolean) => input.raw.push(raw);
  const prompt = new PassThrough();
  let shown = "";
  prompt.on("data", (chunk: Buffer) => (shown += chunk.toString()));
  return { input: Object.assign(input, { setRawMode }), prompt, shown: () => shown };
}

describe("users create's password", () => {
  it("asks twice on a terminal without echoing what is typed", async () => {
    const t = terminal();
    const answer = resolvePassword({ stdin: t.input, prompt: t.prompt });
    t.input.write("hunter2x\r");
    await new Promise((resolve) => setImmediate(resolve));
    t.input.write("hunter22\u007fx\r");
    expect(await answer).toBe("hunter2x");
    expect(t.shown()).toBe("Password: \nPassword (again): \n");
    expect(t.input.raw).toEqual([true, false, true, false]);
  });

  it("refuses two different entries, and Ctrl-C", async () => {
    const t = terminal();
    const mismatch = resolvePassword({ stdin: t.input, prompt: t.prompt });
    t.input.write("first-one\r");
    await new Promise((resolve) => setImmediate(resolve));
    t.input.write("second-one\r");
    await expect(mismatch).rejects.toThrow("the passwords do not match");

    const u = terminal();
    const aborted = resolvePassword({ stdin: u.input, prompt: u.prompt });
    u.input.write("abc\u0003");
    await expect(aborted).rejects.toThrow("no password entered");
  });

  it("reads stdin without its final line ending, keeps --password, and never waits on a pipe", async () => {
    const piped = Object.assign(new PassThrough(), { isTTY: false });
    piped.end("  spaced secret \n");
    expect(await resolvePassword({ passwordStdin: true, stdin: piped, prompt: new PassThrough() })).toBe("  spaced secret ");
    expect(await resolvePassword({ password: "given-one", stdin: piped, prompt: new PassThrough() })).toBe("given-one");
    await expect(resolvePassword({ stdin: Object.assign(new PassThrough(), { isTTY: false }), prompt: new PassThrough() })).rejects.toThrow(
      /no password: pipe it with --password-stdin/,
    );
    await expect(resolvePassword({ password: "x", passwordStdin: true, stdin: piped, prompt: new PassThrough() })).rejects.toThrow(
      /not both/,
    );
  });
});
