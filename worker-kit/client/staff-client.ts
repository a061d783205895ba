import { loginResultSchema, type LoginResult } from "../wire/auth.js";
import {
  incidentListSchema,
  incidentResultSchema,
  incidentScanResultSchema,
  type IncidentList,
  type IncidentResult,
  type IncidentScanResult,
  type IncidentUpdate,
} from "../wire/incidents.js";
import {
  draftResultSchema,
  staffCaseDetailSchema,
  staffCasePageSchema,
  staffCaseResultSchema,
  staffReplyResultSchema,
  type DraftResult,
  type StaffCaseDetail,
  type StaffCasePage,
  type StaffCaseResult,
  type StaffReplyResult,
} from "../wire/staff.js";
import { z } from "zod";
import { createHttpCaller, type HttpCaller, type HttpOptions } from "./http.js";

// The staff endpoints of the support workspace (docs/support.md, "Staff"): an admin session from the login route
// (its throttle applies), its bearer token on every call and its CSRF token on every POST. Types and answer
// checks come from the wire modules the routes validate with.

export interface LoginOptions extends HttpOptions {
  email: string;
  password: string;
}

export type CaseChange = "takeover" | "resume" | "resolve" | "reopen";
export type DraftKind = "operator" | "bug";

export interface StaffClient {
  /** Who is logged in, and until when. */
  readonly session: LoginResult;
  listCases(page?: { limit?: number; cursor?: string }): Promise<StaffCasePage>;
  getCase(id: string): Promise<StaffCaseDetail>;
  change(id: string, change: CaseChange): Promise<StaffCaseResult>;
  /** A reviewed staff reply in the transcript (dashboard cases only). */
  reply(id: string, content: string): Promise<StaffReplyResult>;
  /** Without `content` a worker is asked to generate the draft; with it a reviewed draft is saved. */
  draft(id: string, kind: DraftKind, content?: string): Promise<DraftResult>;
  listIncidents(): Promise<IncidentList>;
  updateIncident(id: string, update: IncidentUpdate): Promise<IncidentResult>;
  /** Runs the incident scan now; answers the incidents it raised and refreshed. */
  scanIncidents(): Promise<IncidentScanResult>;
  logout(): Promise<void>;
}

const okSchema = z.object({ ok: z.literal(true) });

export async function login(options: LoginOptions): Promise<StaffClient> {
  const call = createHttpCaller(options);
  const { data: session } = await call({
    method: "POST",
    path: "/api/v1/auth/login",
    headers: {},
    body: { email: options.email, password: options.password },
    answer: loginResultSchema,
  });
  return staffClient(call, session);
}

function staffClient(call: HttpCaller, session: LoginResult): StaffClient {
  const read = { authorization: `Bearer ${session.token}` };
  const write = { authorization: `Bearer ${session.token}`, "x-csrf-token": session.csrf_token };
  const casePath = (id: string, action = "") => `/api/v1/assistant/cases/${encodeURIComponent(id)}${action}`;
  return {
    session,
    async listCases(page = {}) {
      const query = { limit: page.limit, cursor: page.cursor };
      return (await call({ method: "GET", path: "/api/v1/assistant/cases", headers: read, query, answer: staffCasePageSchema })).data;
    },
    async getCase(id) {
      return (await call({ method: "GET", path: casePath(id), headers: read, answer: staffCaseDetailSchema })).data;
    },
    async change(id, change) {
      return (await call({ method: "POST", path: casePath(id, `/${change}`), headers: write, answer: staffCaseResultSchema })).data;
    },
    async reply(id, content) {
      const body = { content };
      return (await call({ method: "POST", path: casePath(id, "/messages"), headers: write, body, answer: staffReplyResultSchema })).data;
    },
    async draft(id, kind, content) {
      const body = content === undefined ? {} : { content };
      return (await call({ method: "POST", path: casePath(id, `/${kind}-draft`), headers: write, body, answer: draftResultSchema })).data;
    },
    async listIncidents() {
      return (await call({ method: "GET", path: "/api/v1/assistant/incidents", headers: read, answer: incidentListSchema })).data;
    },
    async updateIncident(id, update) {
      const path = `/api/v1/assistant/incidents/${encodeURIComponent(id)}`;
      return (await call({ method: "POST", path, headers: write, body: update, answer: incidentResultSchema })).data;
    },
    async scanIncidents() {
      const path = "/api/v1/assistant/incidents/scan";
      return (await call({ method: "POST", path, headers: write, answer: incidentScanResultSchema })).data;
    },
    async logout() {
      await call({ method: "POST", path: "/api/v1/auth/logout", headers: write, answer: okSchema });
    },
  };
}
