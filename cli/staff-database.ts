import type { Pool } from "../src/db/pool.js";
import { validate } from "../src/server/body.js";
import { incidentUpdateBody } from "@model-gateway/worker-kit/wire/incidents";
import { listIncidents, scanIncidentsNow, updateIncident } from "../src/support/incidents/incidents.js";
import { changeAsStaff, listStaffCases, staffCaseDetail } from "../src/support/staff/staff.js";
import { LIST_LIMIT } from "@model-gateway/worker-kit/wire/support";
import { withServices, type CommonOptions } from "./context.js";
import { withCommonOptions } from "./options.js";
import { fail } from "./output.js";
import type { StaffFamily, StaffOps, VerbOptions } from "./staff-commands.js";

// The database family of the staff's verbs (`gateway cases`, `gateway incidents`): the staff routes' own services
// on the gateway's database, so they work without a running gateway and act exactly as the routes do. The actor
// recorded is `cli`.

const ACTOR = "cli";

function databaseOps(pool: Pool, logPool: Pool): StaffOps {
  return {
    listCases: (page) => listStaffCases(pool, { limit: page.limit ?? LIST_LIMIT.default, cursor: page.cursor }),
    getCase: (id) => staffCaseDetail(pool, id),
    change: (id, change) => changeAsStaff(pool, id, change, ACTOR),
    listIncidents: () => listIncidents(pool),
    updateIncident: (id, update) => updateIncident(pool, id, validate(incidentUpdateBody, update), ACTOR),
    scanIncidents: () => scanIncidentsNow(pool, logPool),
  };
}

export const databaseFamily: StaffFamily<CommonOptions & VerbOptions> = {
  options: withCommonOptions,
  run: (opts, work) => withServices(opts, (s) => work(databaseOps(s.pool, s.logPool))),
  fail,
};
