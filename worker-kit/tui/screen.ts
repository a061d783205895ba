import type { StaffClient } from "../client/staff-client.js";
import type { WorkerClient } from "../client/worker-client.js";
import type { EditText } from "./editor.js";

// The contract between the TUI's shell (app.tsx: login, navigation, help bar, error line, terminal size) and its
// screens (queue, case, incidents, job). A screen is a component of ScreenProps; it does its own fetching through
// the clients, reports failures through showError (one line; the UI stays), and lists its keys with setHelp.

export type Route = { screen: "queue" } | { screen: "case"; caseId: string } | { screen: "incidents" } | { screen: "job" };
export type ScreenName = Route["screen"];

export interface KeyHelp {
  /** As shown: "t", "enter", "←/→". */
  key: string;
  label: string;
}

export interface ScreenProps {
  staff: StaffClient;
  /** Null when no bot token was given: the job screen then says how to give one. */
  worker: WorkerClient | null;
  editText: EditText;
  go(route: Route): void;
  showError(err: unknown): void;
  /** Clears the error line (after an action succeeds) or shows a one-line notice. */
  showNotice(message: string | null): void;
  /** The screen's own keys, shown in the help bar after the shell's. */
  setHelp(keys: KeyHelp[]): void;
  /** The body's size: the terminal less the shell's header, error and help lines. */
  columns: number;
  rows: number;
  /** Milliseconds since the epoch; injected so that countdowns are testable. */
  now(): number;
}
