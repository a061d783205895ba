import { randomBytes } from "node:crypto";
import { execa } from "execa";

// A pseudo-terminal for end-to-end tests of the terminal UI: a tmux server of its own (its own socket, so it never
// meets the user's tmux), one window of a given size running one command, keys sent as a user would type them,
// and the screen read back as text.

export interface Terminal {
  /** Sends keys as tmux names them ("Enter", "Escape", "Down", "C-c") or literal text with `literal`. */
  keys(...keys: string[]): Promise<void>;
  type(text: string): Promise<void>;
  /** The visible screen, one string per row, trailing spaces trimmed. */
  screen(): Promise<string[]>;
  /** Resolves with the screen once `pattern` shows on it; rejects with the last screen after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string[]>;
  resize(columns: number, rows: number): Promise<void>;
  /** Whether the command has exited (the pane stays, so its last screen can still be read). */
  exited(): Promise<boolean>;
  close(): Promise<void>;
}

export async function openTerminal(
  command: string[],
  opts: { columns?: number; rows?: number; env?: Record<string, string>; cwd?: string } = {},
): Promise<Terminal> {
  const socket = `gateway-test-${randomBytes(6).toString("hex")}`;
  const tmux = (...args: string[]) => execa("tmux", ["-L", socket, "-f", "/dev/null", ...args], { cwd: opts.cwd });
  const env = Object.entries(opts.env ?? {}).map(([key, value]) => `${key}=${value}`);
  await tmux(
    "new-session",
    "-d",
    "-s",
    "t",
    "-x",
    String(opts.columns ?? 80),
    "-y",
    String(opts.rows ?? 24),
    "env",
    "TERM=xterm-256color",
    ...env,
    ...command,
  );
  await tmux("set-option", "-t", "t", "remain-on-exit", "on");
  const screen = async () => (await tmux("capture-pane", "-p", "-t", "t")).stdout.split("\n").map((line) => line.trimEnd());
  return {
    async keys(...keys) {
      await tmux("send-keys", "-t", "t", ...keys);
    },
    async type(text) {
      await tmux("send-keys", "-t", "t", "-l", text);
    },
    screen,
    async waitFor(pattern, timeoutMs = 20_000) {
      const until = Date.now() + timeoutMs;
      let last: string[] = [];
      while (Date.now() < until) {
        last = await screen();
        if (pattern.test(last.join("\n"))) return last;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`the screen never showed ${pattern}; last screen:\n${last.join("\n")}`);
    },
    async resize(columns, rows) {
      await tmux("resize-window", "-t", "t", "-x", String(columns), "-y", String(rows));
    },
    async exited() {
      return (await tmux("display-message", "-p", "-t", "t", "#{pane_dead}")).stdout.trim() === "1";
    },
    async close() {
      await tmux("kill-server").catch(() => undefined);
    },
  };
}
