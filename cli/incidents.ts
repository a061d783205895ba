import { Command, Option } from "commander";
import { validate } from "../src/server/body.js";
import { incidentUpdateBody, type Incident, type IncidentUpdate } from "../src/support/incidents/incident-wire.js";
import { listIncidents, updateIncident } from "../src/support/incidents/incidents.js";
import { INCIDENT_STATUSES } from "../src/support/wire.js";
import { withServices, type CommonOptions } from "./context.js";
import { action, printJson, printTable } from "./output.js";
import { withCommonOptions } from "./options.js";

// `gateway incidents`: the staff's incident routes for operators (docs/support.md, "Incidents"), through the same
// service and rules; the actor recorded is `cli`.

const columns = ["id", "status", "public_model", "error_code", "linked_cases", "technically_corroborated_at", "published_at", "updated_at"];

async function change(id: string, body: IncidentUpdate, opts: CommonOptions): Promise<void> {
  const valid = validate(incidentUpdateBody, body);
  const { incident } = await withServices(opts, (s) => updateIncident(s.pool, id, valid, "cli"));
  if (opts.json) printJson(incident);
  else process.stdout.write(`${describe(incident)}\n`);
}

const describe = (i: Incident) =>
  `incident ${i.id} (${i.title}) is ${i.status}, ${i.published_at === null ? "not published" : `published since ${i.published_at}`}`;

export function incidentsCommand(): Command {
  const incidents = new Command("incidents");

  withCommonOptions(incidents.command("list").description("candidate and confirmed incidents, with their private aggregates")).action(
    action(async (opts: CommonOptions) => {
      const { incidents: list } = await withServices(opts, (s) => listIncidents(s.pool));
      if (opts.json) printJson(list);
      else printTable(list as unknown as Record<string, unknown>[], columns);
    }),
  );

  withCommonOptions(
    incidents.command("update").description("move an incident one step (candidate → confirmed → resolved), set its summary"),
  )
    .argument("<id>", "incident id")
    .addOption(new Option("--status <status>", "the next status").choices(INCIDENT_STATUSES))
    .option("--summary <text>", "the public summary the linked cases' users will read once published")
    .action(
      action(async (id: string, opts: CommonOptions & { status?: Incident["status"]; summary?: string }) => {
        const body: IncidentUpdate = {};
        if (opts.status !== undefined) body.status = opts.status;
        if (opts.summary !== undefined) body.public_summary = opts.summary;
        await change(id, body, opts);
      }),
    );

  withCommonOptions(
    incidents.command("publish").description("publish the summary (needs confirmed or resolved and technical corroboration)"),
  )
    .argument("<id>", "incident id")
    .option("--summary <text>", "set the public summary first")
    .option("--withdraw", "withdraw a published summary instead")
    .action(
      action(async (id: string, opts: CommonOptions & { summary?: string; withdraw?: boolean }) => {
        const body: IncidentUpdate = { publish: opts.withdraw !== true };
        if (opts.summary !== undefined) body.public_summary = opts.summary;
        await change(id, body, opts);
      }),
    );
  return incidents;
}
