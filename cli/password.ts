import type { Readable, Writable } from "node:stream";

/** Where a password can come from, in order: `--password` (the operator contract, docs/architecture.md "Rules"), `--password-stdin`, a prompt. */
export interface PasswordSources {
  password?: string;
  passwordStdin?: boolean;
  stdin: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  /** Where the prompt is written (stderr, so stdout stays the command's output). */
  prompt: Writable;
}

/** All of stdin, without the one line ending `echo` or a here-string adds. */
export async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

/**
 * Reads one line from a terminal without echoing it. Ctrl-C and Ctrl-D abort: the caller gets an error rather
 * than an empty password.
 */
export function promptHidden(question: string, input: PasswordSources["stdin"], output: Writable): Promise<string> {
  return new Promise((resolve, reject) => {
    let typed = "";
    output.write(question);
    input.setRawMode?.(true);
    input.setEncoding("utf8");
    const finish = (err?: Error) => {
      input.setRawMode?.(false);
      input.off("data", onData);
      input.pause();
      output.write("\n");
      if (err) reject(err);
      else resolve(typed);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") return finish();
        if (ch === "\u0003" || ch === "\u0004") return finish(new Error("no password entered"));
        if (ch === "\u007f" || ch === "\b") typed = typed.slice(0, -1);
        else typed += ch;
      }
    };
    input.on("data", onData);
    input.resume();
  });
}

export async function resolvePassword(sources: PasswordSources): Promise<string> {
  if (sources.password !== undefined && sources.passwordStdin) throw new Error("pass either --password or --password-stdin, not both");
  if (sources.password !== undefined) return sources.password;
  if (sources.passwordStdin) return readAll(sources.stdin);
  if (!sources.stdin.isTTY) throw new Error("no password: pipe it with --password-stdin (or run on a terminal to be asked)");
  const first = await promptHidden("Password: ", sources.stdin, sources.prompt);
  const again = await promptHidden("Password (again): ", sources.stdin, sources.prompt);
  if (first !== again) throw new Error("the passwords do not match");
  return first;
}
