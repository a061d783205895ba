import { Command } from "commander";
import { incidentVerbs } from "./staff-commands.js";
import { databaseFamily } from "./staff-database.js";

// `gateway incidents`: the staff's incident verbs on the gateway's database (docs/support.md, "Incidents"), the
// same as `gateway support incidents` over HTTP (cli/staff-commands.ts); the actor recorded is `cli`.

export function incidentsCommand(): Command {
  const incidents = new Command("incidents");
  incidentVerbs(incidents, databaseFamily);
  return incidents;
}
