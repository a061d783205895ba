import { Command } from "commander";
import { caseVerbs } from "./staff-commands.js";
import { databaseFamily } from "./staff-database.js";

// `gateway cases`: the staff's view of support cases on the gateway's database (docs/cli.md); the same verbs as
// `gateway support cases` over HTTP (cli/staff-commands.ts).

export function casesCommand(): Command {
  const cases = new Command("cases");
  caseVerbs(cases, databaseFamily);
  return cases;
}
