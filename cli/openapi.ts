import { writeFile } from "node:fs/promises";
import { Command } from "commander";
import { apiDescription } from "../src/runtime/routes.js";
import { action } from "./output.js";

export function openapiCommand(): Command {
  return new Command("openapi").option("--out <file>", "write it to this file instead of stdout").action(
    action(async (opts: { out?: string }) => {
      const document = apiDescription();
      const text = `${JSON.stringify(document, null, 2)}\n`;
      if (!opts.out) {
        process.stdout.write(text);
        return;
      }
      await writeFile(opts.out, text);
      process.stderr.write(`wrote ${opts.out} (${Object.keys(document.paths as object).length} paths)\n`);
    }),
  );
}
