import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { gateway } from "../helpers/cli.js";

/** The command names a `--help` lists under "Commands:", `help` aside. */
function commandsOf(help: string): string[] {
  const section = help.split("Commands:\n")[1] ?? "";
  return section
    .split("\n")
    .map((line) => /^ {2}([a-z][a-z-]*)/.exec(line)?.[1])
    .filter((name): name is string => !!name && name !== "help");
}

// The README's synopsis is where an operator looks first: every command and subcommand the CLI has stands in it.
describe("the README's CLI synopsis", () => {
  const readme = readFileSync(path.resolve("README.md"), "utf8");
  const synopsis = (/## CLI\n\n```\n([\s\S]*?)```/.exec(readme)?.[1] ?? "").split("\n");

  it("names every command and every subcommand", async () => {
    const cwd = process.cwd();
    const top = await gateway(["--help"], { cwd });
    expect(top.exitCode, top.stderr).toBe(0);
    const commands = commandsOf(top.stdout);
    expect(commands).toContain("serve");
    const missing: string[] = [];
    for (const command of commands) {
      const lines = synopsis.filter((line) => line.startsWith(`gateway ${command} `) || line === `gateway ${command}`);
      if (lines.length === 0) missing.push(command);
      const help = await gateway([command, "--help"], { cwd });
      for (const sub of commandsOf(help.stdout)) {
        // `gateway users disable|enable|delete …` names three subcommands in one line.
        const named = lines.some((line) => line.split(" ")[2]?.split("|").includes(sub));
        if (!named) missing.push(`${command} ${sub}`);
      }
    }
    expect(missing).toEqual([]);
  }, 120_000);
});
