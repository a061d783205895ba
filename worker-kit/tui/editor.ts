import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

// Editing text in the user's $EDITOR (git's habit: $VISUAL, then $EDITOR, then vi). The editor gets the terminal
// for as long as it runs: the caller releases it first (Ink's raw mode) and takes it back after (`terminal`).

/** The edited text, or null when the editor failed or the user left the text empty (nothing to save). */
export type EditText = (initial: string, options?: { suffix?: string }) => Promise<string | null>;

export interface EditorOptions {
  env?: NodeJS.ProcessEnv;
  /** Hands the terminal to the editor and back. */
  terminal?: { release(): void; reclaim(): void };
}

export function editorCommand(env: NodeJS.ProcessEnv): string {
  return env.VISUAL?.trim() || env.EDITOR?.trim() || "vi";
}

export function createEditor(options: EditorOptions = {}): EditText {
  const env = options.env ?? process.env;
  return async (initial, { suffix = ".md" } = {}) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "gateway-edit-"));
    const file = path.join(dir, `edit${suffix}`);
    try {
      writeFileSync(file, initial, { mode: 0o600 });
      options.terminal?.release();
      // Through the shell, as git does, so "code --wait" or "nano -w" work; the path is ours and needs no quoting
      // beyond the double quotes (mkdtemp names are [A-Za-z0-9]).
      const result = spawnSync(`${editorCommand(env)} "${file}"`, { shell: true, stdio: "inherit", env });
      options.terminal?.reclaim();
      if (result.status !== 0) return null;
      const edited = readFileSync(file, "utf8");
      return edited.trim() === "" ? null : edited;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
