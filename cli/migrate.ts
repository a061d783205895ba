import { Command } from "commander";
import { runMigrations } from "../src/db/migrate.js";
import { adminLogger, loadAdminConfig, openAdminDatabase, type CommonOptions } from "./context.js";
import { withCommonOptions } from "./options.js";
import { action, printJson } from "./output.js";

export function migrateCommand(): Command {
  return withCommonOptions(new Command("migrate")).action(
    action(async (opts: CommonOptions) => {
      const logger = adminLogger();
      const db = await openAdminDatabase(opts, loadAdminConfig(opts), logger);
      try {
        await runMigrations(db.pool, logger);
      } finally {
        await db.close();
      }
      if (opts.json) printJson({ ok: true });
      else process.stdout.write("database is up to date\n");
    }),
  );
}
