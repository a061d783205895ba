import http from "node:http";
import net from "node:net";
import { writeFile } from "node:fs/promises";
import { execa } from "execa";

// Clients posting a body the way real ones do, for the tests of refused bodies: Node's http client (declared
// length written 1 MiB at a time, chunked, or after `Expect: 100-continue`), curl, and a bare socket that
// writes its whole request before reading anything.

export interface PostAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The client got `100 Continue`. */
  continued: boolean;
  /** The client's error, if one came after the answer (the request is settled by its close). */
  error: string | undefined;
}

export type NodeMode = "length" | "chunked" | "expect";

const MiB = 1024 * 1024;

/**
 * POSTs `body` with Node's http client and settles once the request is closed: "length" declares it and writes
 * 1 MiB at a time as the socket takes them, "chunked" does the same without a length, "expect" declares it and
 * sends `Expect: 100-continue`, writing it only after `100 Continue`. Rejects when no answer came.
 */
export function nodePost(url: string, headers: Record<string, string>, body: Buffer, mode: NodeMode): Promise<PostAnswer> {
  const all: http.OutgoingHttpHeaders = { ...headers };
  if (mode !== "chunked") all["content-length"] = body.length;
  if (mode === "expect") all.expect = "100-continue";
  return new Promise((resolve, reject) => {
    const answer: PostAnswer = { status: 0, headers: {}, text: "", continued: false, error: undefined };
    let ended = false;
    const req = http.request(url, { method: "POST", headers: all }, (res) => {
      answer.status = res.statusCode!;
      answer.headers = res.headers;
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (answer.text += chunk));
      res.on("end", () => (ended = true));
    });
    req.on("error", (err: NodeJS.ErrnoException) => (answer.error = err.code ?? err.message));
    req.on("close", () => (ended ? resolve(answer) : reject(new Error(`no answer: ${answer.error ?? "closed"}`))));
    const send = async () => {
      for (let at = 0; at < body.length && !req.destroyed; at += MiB) {
        if (!req.write(body.subarray(at, at + MiB))) await drained(req);
      }
      if (!req.destroyed) req.end();
    };
    if (mode === "expect") {
      req.on("continue", () => {
        answer.continued = true;
        void send();
      });
      req.flushHeaders();
    } else void send();
  });
}

/** The writer's buffer drained, or the writer closed (then nothing more is written). */
export function drained(writer: NodeJS.EventEmitter): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      writer.off("drain", done);
      writer.off("close", done);
      resolve();
    };
    writer.on("drain", done);
    writer.on("close", done);
  });
}

export interface CurlAnswer {
  status: number;
  text: string;
  /** curl sent `Expect: 100-continue`. */
  expected: boolean;
  continued: boolean;
}

/** `curl --data-binary @file` of `body` (curl sends `Expect: 100-continue` for bodies over 1 MiB); `args` go first. */
export async function curlPost(
  url: string,
  headers: Record<string, string>,
  body: Buffer,
  file: string,
  args: string[] = [],
): Promise<CurlAnswer> {
  await writeFile(file, body);
  const headerArgs = Object.entries(headers).flatMap(([name, value]) => ["-H", `${name}: ${value}`]);
  // -v writes what was sent (">") and received ("<") to stderr; -w adds the status after the body.
  const { stdout, stderr } = await execa("curl", [
    "-sS",
    "-v",
    ...args,
    ...headerArgs,
    "--data-binary",
    `@${file}`,
    "-w",
    "\n%{http_code}",
    url,
  ]);
  const cut = stdout.lastIndexOf("\n");
  return {
    status: Number(stdout.slice(cut + 1)),
    text: stdout.slice(0, cut),
    expected: /^> Expect: 100-continue/im.test(stderr),
    continued: /^< HTTP\/1\.1 100 Continue/im.test(stderr),
  };
}

/**
 * Writes `head` and `body` on a bare connection before reading anything, then settles with everything the
 * server sent until it closed; rejects on a reset, which is what loses a client its answer.
 */
export function writeThenRead(port: number, head: string, body: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const received: Buffer[] = [];
    socket.pause();
    socket.on("error", reject);
    socket.on("end", () => resolve(Buffer.concat(received).toString("utf8")));
    socket.write(head);
    socket.write(body, () => {
      socket.on("data", (chunk: Buffer) => received.push(chunk));
      socket.resume();
    });
  });
}
